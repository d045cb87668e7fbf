package store

import "encoding/json"

// DecodeList returns the values of bucket whose key has prefix, in key
// order, each decoded from JSON into a T. A value that does not decode
// stops the list with corrupt(key, err): the bucket's owner names its
// record and the step that repairs it.
func DecodeList[T any](r Reader, bucket, prefix string, corrupt func(key string, err error) error) ([]T, error) {
	out := []T{}
	// json.Unmarshal copies what it keeps: the values need no copy.
	err := Each(r, bucket, prefix, func(key string, value []byte) error {
		var v T
		if err := json.Unmarshal(value, &v); err != nil {
			return corrupt(key, err)
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Each calls fn with every entry of bucket whose key has prefix, in key
// order: the entries List returns. value is valid only until fn returns,
// and fn must not change it: a reader that can lend its snapshot's bytes
// (bolt's) passes them without a copy, for callers that decode each value
// into memory of their own anyway. Each stops at fn's first error and
// returns it.
func Each(r Reader, bucket, prefix string, fn func(key string, value []byte) error) error {
	if l, ok := r.(lender); ok {
		return l.each(bucket, prefix, fn)
	}
	kvs, err := r.List(bucket, prefix)
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		if err := fn(kv.Key, kv.Value); err != nil {
			return err
		}
	}
	return nil
}

// lender is a Reader that Each may lend the bytes of its snapshot from.
type lender interface {
	each(bucket, prefix string, fn func(key string, value []byte) error) error
}
