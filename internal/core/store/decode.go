package store

import "encoding/json"

// DecodeList returns the values of bucket whose key has prefix, in key
// order, each decoded from JSON into a T. A value that does not decode
// stops the list with corrupt(key, err): the bucket's owner names its
// record and the step that repairs it.
func DecodeList[T any](r Reader, bucket, prefix string, corrupt func(key string, err error) error) ([]T, error) {
	kvs, err := r.List(bucket, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(kvs))
	for _, kv := range kvs {
		var v T
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			return nil, corrupt(kv.Key, err)
		}
		out = append(out, v)
	}
	return out, nil
}
