package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

type decodeRecord struct {
	Name string `json:"name"`
	N    int    `json:"n"`
}

func TestDecodeListReadsThePrefixInKeyOrder(t *testing.T) {
	b, _ := openTemp(t)
	err := b.Update(func(tx Tx) error {
		for k, v := range map[string]string{
			"p 2":  `{"name":"two","n":2}`,
			"p 1":  `{"name":"one","n":1}`,
			"q 1":  `not json, but outside the prefix`,
			"p 10": `{"name":"ten","n":10}`,
		} {
			if err := tx.Put("recs", k, []byte(v)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []decodeRecord
	err = b.View(func(r Reader) error {
		got, err = DecodeList[decodeRecord](r, "recs", "p ", func(key string, err error) error {
			return fmt.Errorf("record %s: %w", key, err)
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []decodeRecord{{"one", 1}, {"ten", 10}, {"two", 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeList = %+v, want %+v", got, want)
	}

	// A bucket never written to is an empty list, not an error.
	err = b.View(func(r Reader) error {
		got, err = DecodeList[decodeRecord](r, "absent", "", nil)
		return err
	})
	if err != nil || len(got) != 0 {
		t.Fatalf("absent bucket: %v, %v; want an empty list", got, err)
	}
}

func TestDecodeListNamesTheCorruptRecord(t *testing.T) {
	b, _ := openTemp(t)
	err := b.Update(func(tx Tx) error {
		if err := tx.Put("recs", "a", []byte(`{"name":"a"}`)); err != nil {
			return err
		}
		return tx.Put("recs", "b", []byte(`{"name":`))
	})
	if err != nil {
		t.Fatal(err)
	}
	var corruptKey string
	err = b.View(func(r Reader) error {
		_, err := DecodeList[decodeRecord](r, "recs", "", func(key string, err error) error {
			corruptKey = key
			return fmt.Errorf("record %s is corrupt: %w", key, err)
		})
		return err
	})
	var syn *json.SyntaxError
	if corruptKey != "b" || err == nil || err.Error() == "" || !errors.As(err, &syn) {
		t.Fatalf("corrupt record: key %q, err %v; want key b and the JSON error wrapped", corruptKey, err)
	}
}

// listOnly is a Reader that lends nothing: Each takes its List.
type listOnly struct{ Reader }

// Each gives what List gives, in the same order, from bolt's lent bytes
// and from a reader that only lists; it stops at fn's first error.
func TestEachEqualsList(t *testing.T) {
	b, _ := openTemp(t)
	err := b.Update(func(tx Tx) error {
		for i := range 50 {
			if err := tx.Put("recs", fmt.Sprintf("p %02d", i), []byte(fmt.Sprintf("value %d", i*i))); err != nil {
				return err
			}
		}
		if err := tx.Put("recs", "p empty", []byte{}); err != nil {
			return err
		}
		return tx.Put("recs", "q 1", []byte("outside the prefix"))
	})
	if err != nil {
		t.Fatal(err)
	}
	collect := func(r Reader, bucket, prefix string) (got []KV) {
		t.Helper()
		err := Each(r, bucket, prefix, func(key string, value []byte) error {
			got = append(got, KV{Key: key, Value: append([]byte{}, value...)})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	err = b.View(func(r Reader) error {
		if _, ok := r.(lender); !ok {
			t.Fatal("bolt's reader does not lend its bytes: Each would copy them")
		}
		for _, c := range []struct{ bucket, prefix string }{{"recs", ""}, {"recs", "p "}, {"recs", "p 4"}, {"recs", "zz"}, {"absent", ""}} {
			want, err := r.List(c.bucket, c.prefix)
			if err != nil {
				t.Fatal(err)
			}
			for name, rd := range map[string]Reader{"bolt": r, "list only": listOnly{r}} {
				got := collect(rd, c.bucket, c.prefix)
				if len(got) != len(want) {
					t.Fatalf("%s, %s %q: %d entries, List has %d", name, c.bucket, c.prefix, len(got), len(want))
				}
				for i := range want {
					if got[i].Key != want[i].Key || string(got[i].Value) != string(want[i].Value) {
						t.Errorf("%s, %s %q #%d: %q=%q, List has %q=%q", name, c.bucket, c.prefix, i, got[i].Key, got[i].Value, want[i].Key, want[i].Value)
					}
				}
			}
		}
		stop := errors.New("stop")
		for name, rd := range map[string]Reader{"bolt": r, "list only": listOnly{r}} {
			n := 0
			err := Each(rd, "recs", "", func(string, []byte) error {
				if n++; n == 3 {
					return stop
				}
				return nil
			})
			if !errors.Is(err, stop) || n != 3 {
				t.Errorf("%s: Each returned %v after %d calls, want fn's error after 3", name, err, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
