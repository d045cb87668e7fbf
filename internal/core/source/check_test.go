package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/wharfhq/wharf/plugin"
)

// checkT is what compareCheck needs of a *testing.T or a *rapid.T.
type checkT interface {
	Helper()
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// checkSentinels are the errors a caller of Fetch branches on.
var checkSentinels = []error{ErrUnsafePath, ErrLink, ErrTooManyEntries, ErrTooLarge, ErrUnsupported, ErrNotFound}

// compareCheck fetches the plugin at mkt/plugins/p with Fetch into a fresh
// directory and with Check, and fails unless both give the same result:
// the same entries, bytes, hashes, commit and URL, or errors with the same
// text (scratch paths aside) wrapping the same sentinels. Check must leave
// nothing in TMPDIR, which the caller points at tmp.
func compareCheck(t checkT, f *Fetcher, mkt, tmp string) (fetched *Result, fetchErr error) {
	t.Helper()
	dest, err := os.MkdirTemp(tmp, "dest-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dest)
	req := Request{Plugin: "p@m", Source: plugin.Source{Kind: plugin.SourceRelative, Path: "./plugins/p"}, MarketplaceDir: mkt}
	fr := req
	fr.Dest = dest
	want, wantErr := f.Fetch(context.Background(), fr)
	got, gotErr := f.Check(context.Background(), req)
	if left, _ := os.ReadDir(tmp); len(left) != 1 {
		t.Errorf("Check left %d entries in TMPDIR", len(left)-1)
	}
	scrub := regexp.MustCompile(regexp.QuoteMeta(tmp) + `/[^/\s:]+`)
	msg := func(err error) string {
		if err == nil {
			return ""
		}
		return scrub.ReplaceAllString(err.Error(), "<dest>")
	}
	if msg(gotErr) != msg(wantErr) {
		t.Fatalf("Check error %q; Fetch error %q", msg(gotErr), msg(wantErr))
	}
	for _, s := range checkSentinels {
		if errors.Is(gotErr, s) != errors.Is(wantErr, s) {
			t.Errorf("errors.Is(_, %v): Check %v, Fetch %v", s, errors.Is(gotErr, s), errors.Is(wantErr, s))
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Check result %+v; Fetch result %+v", got, want)
	}
	return want, wantErr
}

func TestCheckSameAsFetch(t *testing.T) {
	big := strings.Repeat("x", 3000)
	cases := []struct {
		name   string
		limits Limits
		build  func(t *testing.T, p string)
		want   error // what Fetch says; nil for a plugin it takes
	}{
		{"plain", Limits{}, func(t *testing.T, p string) {
			writeFile(t, filepath.Join(p, ".claude-plugin/plugin.json"), `{"name":"p"}`, 0o644)
			writeFile(t, filepath.Join(p, "commands/a.md"), "a", 0o644)
			writeFile(t, filepath.Join(p, "bin/run"), "#!/bin/sh\n", 0o755)
			writeFile(t, filepath.Join(p, "skills/s/SKILL.md"), big, 0o644)
			writeFile(t, filepath.Join(p, "empty"), "", 0o644)
			os.MkdirAll(filepath.Join(p, "a/b/c"), 0o755)
		}, nil},
		{"top-level .git left out, nested kept", Limits{}, func(t *testing.T, p string) {
			writeFile(t, filepath.Join(p, ".git/config"), "x", 0o644)
			writeFile(t, filepath.Join(p, "sub/.git/config"), "y", 0o644)
		}, nil},
		{"entries at the limit", Limits{MaxEntries: 4}, func(t *testing.T, p string) {
			writeFile(t, filepath.Join(p, "d/a"), "a", 0o644)
			writeFile(t, filepath.Join(p, "d/b"), "b", 0o644)
			writeFile(t, filepath.Join(p, "c"), "c", 0o644)
		}, nil},
		{"entries over the limit", Limits{MaxEntries: 3}, func(t *testing.T, p string) {
			writeFile(t, filepath.Join(p, "d/a"), "a", 0o644)
			writeFile(t, filepath.Join(p, "d/b"), "b", 0o644)
			writeFile(t, filepath.Join(p, "c"), "c", 0o644)
		}, ErrTooManyEntries},
		{"bytes at the limit", Limits{MaxBytes: 6000}, func(t *testing.T, p string) {
			writeFile(t, filepath.Join(p, "a"), big, 0o644)
			writeFile(t, filepath.Join(p, "b"), big, 0o644)
		}, nil},
		{"bytes over the limit", Limits{MaxBytes: 5999}, func(t *testing.T, p string) {
			writeFile(t, filepath.Join(p, "a"), big, 0o644)
			writeFile(t, filepath.Join(p, "b"), big, 0o644)
		}, ErrTooLarge},
		{"a fifo", Limits{}, func(t *testing.T, p string) {
			writeFile(t, filepath.Join(p, "a.md"), "a", 0o644)
			if err := mkfifo(filepath.Join(p, "pipe")); err != nil {
				t.Skip("no fifo here:", err)
			}
		}, ErrUnsupported},
		{"symlink inside", Limits{}, func(t *testing.T, p string) {
			writeFile(t, filepath.Join(p, "commands/a.md"), "a", 0o644)
			os.Symlink("commands/a.md", filepath.Join(p, "alias.md"))
		}, nil},
		{"symlink chain out of the plugin", Limits{}, func(t *testing.T, p string) {
			os.MkdirAll(filepath.Join(p, "d"), 0o755)
			os.Symlink("..", filepath.Join(p, "d/up"))
			os.Symlink("d/up/d/up/..", filepath.Join(p, "out"))
		}, ErrLink},
		{"dangling symlink", Limits{}, func(t *testing.T, p string) {
			os.Symlink("none.md", filepath.Join(p, "x.md"))
		}, ErrLink},
		{"absolute symlink", Limits{}, func(t *testing.T, p string) {
			os.Symlink("/etc/passwd", filepath.Join(p, "x"))
		}, ErrLink},
		{"symlink to a sibling plugin", Limits{}, func(t *testing.T, p string) {
			writeFile(t, filepath.Join(p, "../q/x.md"), "x", 0o644)
			os.Symlink("../q/x.md", filepath.Join(p, "x.md"))
		}, ErrLink},
		{"names differing only in case", Limits{}, func(t *testing.T, p string) {
			writeFile(t, filepath.Join(p, "README.md"), "a", 0o644)
			writeFile(t, filepath.Join(p, "readme.md"), "b", 0o644)
		}, nil},
		{"directories differing only in case", Limits{}, func(t *testing.T, p string) {
			writeFile(t, filepath.Join(p, "Docs/a.md"), "a", 0o644)
			writeFile(t, filepath.Join(p, "docs/b.md"), "b", 0o644)
		}, nil},
		{"a name outside ASCII", Limits{}, func(t *testing.T, p string) {
			writeFile(t, filepath.Join(p, "caf\u00e9.md"), "a", 0o644)
			writeFile(t, filepath.Join(p, "cafe\u0301.md"), "b", 0o644)
		}, nil},
		{"not a directory", Limits{}, func(t *testing.T, p string) {
			os.RemoveAll(p)
			writeFile(t, p, "x", 0o644)
		}, ErrNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mkt, tmp := t.TempDir(), t.TempDir()
			t.Setenv("TMPDIR", tmp)
			p := filepath.Join(mkt, "plugins/p")
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			tc.build(t, p)
			_, err := compareCheck(t, &Fetcher{Limits: tc.limits}, mkt, tmp)
			// A case-insensitive or normalizing TMPDIR may refuse what
			// this one takes; the comparison above is what must hold.
			if tc.want != nil || !strings.Contains(tc.name, "case") && !strings.Contains(tc.name, "ASCII") {
				if (err == nil) != (tc.want == nil) || tc.want != nil && !errors.Is(err, tc.want) {
					t.Errorf("Fetch error %v; want %v", err, tc.want)
				}
			}
		})
	}
}

// TestCheckWritesNothing: a tree the memory stands in for is checked
// without a scratch directory (here, TMPDIR does not exist); a tree with a
// symlink needs one.
func TestCheckWritesNothing(t *testing.T) {
	if !memoryCheck {
		t.Skip("Check writes every tree on this system")
	}
	mkt := t.TempDir()
	writeFile(t, filepath.Join(mkt, "plugins/p/commands/a.md"), "a", 0o644)
	writeFile(t, filepath.Join(mkt, "plugins/p/bin/run"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(mkt, "plugins/l/a.md"), "a", 0o644)
	os.Symlink("a.md", filepath.Join(mkt, "plugins/l/b.md"))
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "none"))
	check := func(path string) (*Result, error) {
		return (&Fetcher{}).Check(context.Background(), Request{Plugin: "p@m", Source: plugin.Source{Kind: plugin.SourceRelative, Path: path}, MarketplaceDir: mkt})
	}
	res, err := check("./plugins/p")
	if err != nil {
		t.Fatalf("Check of a plain tree: %v", err)
	}
	if res.Entries != 4 || res.Bytes != int64(len("a")+len("#!/bin/sh\n")) || len(res.Written) != 2 {
		t.Errorf("Check counted %d entries, %d bytes, %d files; want 4, 11, 2", res.Entries, res.Bytes, len(res.Written))
	}
	if _, err := check("./plugins/l"); err == nil {
		t.Errorf("Check of a tree with a symlink needed no scratch directory")
	}
	if _, err := (&Fetcher{}).Check(context.Background(), Request{Plugin: "p@m", Source: plugin.Source{Kind: plugin.SourceGitHub, Repo: "o/r"}}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Check of a github source: %v; want ErrUnsupported", err)
	}
}

// TestCheckSameAsFetchProperty compares Check with Fetch over random
// trees: directories, files of random sizes (some executable), names that
// may differ only in case, a top-level .git, now and then a symlink,
// under random limits.
func TestCheckSameAsFetchProperty(t *testing.T) {
	mkts, tmp := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", tmp)
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		n++
		mkt := filepath.Join(mkts, fmt.Sprint(n))
		p := filepath.Join(mkt, "plugins/p")
		if err := os.MkdirAll(p, 0o755); err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(mkt)
		name := rapid.SampledFrom([]string{"a", "A", "b", "skills", "Skills", ".git", "x.md", "X.md"})
		dirs := []string{p}
		for i, k := 0, rapid.IntRange(0, 12).Draw(rt, "entries"); i < k; i++ {
			parent := rapid.SampledFrom(dirs).Draw(rt, "parent")
			at := filepath.Join(parent, name.Draw(rt, "name"))
			if _, err := os.Lstat(at); err == nil {
				continue
			}
			switch rapid.IntRange(0, 9).Draw(rt, "kind") {
			case 0, 1, 2:
				if err := os.Mkdir(at, 0o755); err != nil {
					rt.Fatal(err)
				}
				dirs = append(dirs, at)
			case 9:
				os.Symlink(rapid.SampledFrom([]string{"a", "../a", "../../x", "/etc"}).Draw(rt, "target"), at)
			default:
				mode := os.FileMode(0o644)
				if rapid.Bool().Draw(rt, "exec") {
					mode = 0o755
				}
				if err := os.WriteFile(at, []byte(strings.Repeat("z", rapid.IntRange(0, 5000).Draw(rt, "size"))), mode); err != nil {
					rt.Fatal(err)
				}
			}
		}
		limits := Limits{MaxEntries: rapid.IntRange(0, 14).Draw(rt, "max entries"), MaxBytes: int64(rapid.IntRange(0, 20000).Draw(rt, "max bytes"))}
		compareCheck(rt, &Fetcher{Limits: limits}, mkt, tmp)
	})
}
