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
