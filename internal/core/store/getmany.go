package store

import "errors"

// BucketKey names one key of one bucket.
type BucketKey struct {
	Bucket, Key string
}

// MultiGetter is a Reader that reads several keys, of any buckets, in one
// request to its backend (etcd: one read-only transaction instead of a
// round trip per key). The values come from the reader's snapshot, and in a
// Tx they count as read for the commit's conflict check, as Get's do.
type MultiGetter interface {
	// GetMany returns the values of keys in their order: nil for a key
	// that is not there, a non-nil (possibly empty) slice otherwise.
	GetMany(keys []BucketKey) ([][]byte, error)
}

// GetMany reads keys through r: in one request when r is a MultiGetter,
// otherwise one Get at a time (bbolt, whose reads are local). A key that is
// not there gives nil; any other value, even an empty one, is non-nil.
func GetMany(r Reader, keys []BucketKey) ([][]byte, error) {
	if m, ok := r.(MultiGetter); ok {
		return m.GetMany(keys)
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := r.Get(k.Bucket, k.Key)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return nil, err
		default:
			if v == nil {
				v = []byte{}
			}
			out[i] = v
		}
	}
	return out, nil
}
