package tokens_test

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/tokens"
	"github.com/wharfhq/wharf/internal/testutil/storeharness"
)

// A token's groups and labels are stored and read back, by id and by its
// secret's hash, on every backend.
func testIdentityKept(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	rec, secret := newRecord(t, tokens.RoleAgent)
	rec.Identity = tokens.Identity{Subject: "u-1", Email: "a@example.com", Groups: []string{"data-team"}, Labels: []string{"os=linux"}}
	put(t, st, rec)
	var got *tokens.Record
	if err := b.Again(t, st).View(func(r store.Reader) (err error) {
		got, err = tokens.ByHash(r, tokens.HashSecret(secret))
		return err
	}); err != nil || got == nil {
		t.Fatalf("by hash: %v %v", got, err)
	}
	if !reflect.DeepEqual(got.Identity, rec.Identity) || !reflect.DeepEqual(got.Public().Identity, rec.Identity) {
		t.Fatalf("identity read back as %+v (public %+v), want %+v", got.Identity, got.Public().Identity, rec.Identity)
	}
}

func TestTargetValidateAndMatch(t *testing.T) {
	tg := tokens.Target{Groups: []string{"web", "data-team", "web"}, Labels: []string{"os=linux"}}
	if err := tg.Validate("target"); err != nil {
		t.Fatal(err)
	}
	kc := tokens.Target{Groups: []string{"/corp/data-team", "team:ml", "a@corp.example"}}
	if err := kc.Validate("target"); err != nil {
		t.Fatalf("identity providers' group names: %v", err)
	}
	if !reflect.DeepEqual(tg.Groups, []string{"data-team", "web"}) {
		t.Fatalf("groups not sorted and unique: %v", tg.Groups)
	}
	for _, c := range []struct {
		id   tokens.Identity
		want bool
	}{
		{tokens.Identity{Groups: []string{"data-team"}}, true},
		{tokens.Identity{Labels: []string{"os=linux"}}, true},
		{tokens.Identity{Groups: []string{"ops"}, Labels: []string{"os=darwin"}}, false},
		{tokens.Identity{}, false},
	} {
		if got := tg.Matches(c.id); got != c.want {
			t.Errorf("%+v matches %+v: %v, want %v", tg, c.id, got, c.want)
		}
	}
	var org *tokens.Target
	if !org.Matches(tokens.Identity{}) || !(&tokens.Target{}).Matches(tokens.Identity{Groups: []string{"x"}}) || org.String() != "organization" {
		t.Fatal("the organization target must match everyone")
	}
	if s := tg.String(); s != "groups data-team,web; labels os=linux" {
		t.Fatalf("String() = %q", s)
	}
	for _, c := range []struct {
		tg    tokens.Target
		field string
	}{
		{tokens.Target{Groups: []string{"ok", "has space"}}, "target.groups[1]"},
		{tokens.Target{Groups: []string{""}}, "target.groups[0]"},
		{tokens.Target{Groups: []string{"-lead"}}, "target.groups[0]"},
		{tokens.Target{Groups: []string{"../x"}}, "target.groups[0]"},
		{tokens.Target{Groups: []string{"a\nb"}}, "target.groups[0]"},
		{tokens.Target{Labels: []string{"os"}}, "target.labels[0]"},
		{tokens.Target{Labels: []string{"os=li nux"}}, "target.labels[0]"},
		{tokens.Target{Groups: make([]string, 33)}, "target.groups"},
		{tokens.Target{Labels: make([]string, 33)}, "target.labels"},
	} {
		err := c.tg.Validate("target")
		var te *tokens.TargetError
		if !errors.As(err, &te) || te.Field != c.field || !strings.HasPrefix(err.Error(), c.field+": ") {
			t.Errorf("%+v: %v, want a TargetError naming %s", c.tg, err, c.field)
		}
	}
}

var (
	groupOK = regexp.MustCompile(`^[A-Za-z0-9/][A-Za-z0-9._@:/-]{0,127}$`)
	labelOK = regexp.MustCompile(`^[a-z0-9][a-z0-9._/-]{0,62}=[A-Za-z0-9._-]{0,63}$`)
)

// FuzzTargetValidate: any input either is refused with a TargetError or
// comes out in canonical form (sorted, unique, each name of the documented
// form), which validates again unchanged.
func FuzzTargetValidate(f *testing.F) {
	for _, s := range []string{"data-team", "os=linux", "a b", "../x", "OS=linux", "k=", "=v", "a\x00b", strings.Repeat("g", 200), "é"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, g, l string) {
		tg := tokens.Target{Groups: []string{g, g}, Labels: []string{l}}
		err := tg.Validate("target")
		if err != nil {
			var te *tokens.TargetError
			if !errors.As(err, &te) {
				t.Fatalf("%q %q: %T %v", g, l, err, err)
			}
			return
		}
		if len(tg.Groups) != 1 || !groupOK.MatchString(tg.Groups[0]) || len(tg.Labels) != 1 || !labelOK.MatchString(tg.Labels[0]) {
			t.Fatalf("accepted %+v", tg)
		}
		again := tg
		if err := again.Validate("target"); err != nil || !reflect.DeepEqual(again, tg) {
			t.Fatalf("canonical %+v validates as %+v, %v", tg, again, err)
		}
		if !tg.Matches(tokens.Identity{Groups: []string{g}}) {
			t.Fatalf("%+v does not match its own group %q", tg, g)
		}
	})
}
