package main

import (
	"bytes"
	"context"
	binenc "encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// junkFreelists overwrites the freelist page each of the file's two meta
// pages names, as a torn write would: the buckets stay readable, the file
// is damaged.
func junkFreelists(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 64)
	if _, err := f.ReadAt(head, 0); err != nil {
		t.Fatal(err)
	}
	pageSize := int64(binenc.NativeEndian.Uint32(head[16+8:]))
	junk := bytes.Repeat([]byte{0xA5}, int(pageSize))
	for page := range int64(2) {
		meta := make([]byte, 64)
		if _, err := f.ReadAt(meta, page*pageSize+16); err != nil {
			t.Fatal(err)
		}
		free := int64(binenc.NativeEndian.Uint64(meta[32:]))
		if free == -1 || free < 2 {
			t.Fatalf("meta %d names freelist page %d", page, free)
		}
		if _, err := f.WriteAt(junk, free*pageSize); err != nil {
			t.Fatal(err)
		}
	}
}

// runServerFor runs wharf-server with args, killed after a minute (a
// server that starts when it should not would otherwise serve forever).
func runServerFor(t *testing.T, home string, args ...string) (int, string, string) {
	t.Helper()
	return runServerEnv(t, home, nil, args...)
}

func runServerEnv(t *testing.T, home string, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, serverBinary(t), args...)
	cmd.Env = append(append(os.Environ(), "WHARF_HOME="+home, "WHARF_BOOTSTRAP_TOKEN="), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("wharf-server %v still ran after a minute\n%s", args, errb.String())
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

// A damaged server.db: the server refuses to start and names its own
// repair command (not the client's); check says damaged and writes
// nothing; repair keeps the damaged file aside and rebuilds the store from
// what it reads, after which the server starts with its tokens intact.
func TestServerCheckAndRepair(t *testing.T) {
	home := t.TempDir()
	data := filepath.Join(home, "server")
	db := filepath.Join(data, "server.db")
	s := startServe(t, home)
	admin := s.info.AdminToken
	code, out, errOut := runWharf(t, t.TempDir(), "token", "create", "--role", "agent", "--server", s.info.URL, "--token", admin)
	if code != 0 {
		t.Fatalf("token create: %d %s %s", code, out, errOut)
	}
	agent := strings.TrimSpace(out)
	// check while the server runs: it holds the file's lock.
	if code, _, errOut := runServerEnv(t, home, []string{"WHARF_LOCK_TIMEOUT=200ms"}, "check"); code == 0 || !strings.Contains(errOut, "stop it first") {
		t.Fatalf("check of a running server's store: exit %d\n%s", code, errOut)
	}
	s.stop(t)

	if code, out, errOut := runServerFor(t, home, "check"); code != 0 || !strings.Contains(out, db+": ok") {
		t.Fatalf("check of a sound store: exit %d\n%s%s", code, out, errOut)
	}

	junkFreelists(t, db)
	damaged, _ := os.ReadFile(db)
	code, _, errOut = runServerFor(t, home, "--addr", "127.0.0.1:0", "--log-level", "warn")
	if code != 1 || !strings.Contains(errOut, db+" is damaged") || !strings.Contains(errOut, "wharf-server repair --data "+data) || strings.Contains(errOut, "wharf doctor") {
		t.Fatalf("start over a damaged store: exit %d\n%s", code, errOut)
	}
	code, out, errOut = runServerFor(t, home, "check", "--json")
	var rep storeReport
	if code != 1 || json.Unmarshal([]byte(out), &rep) != nil || rep.Status != "damaged" || rep.Damage == "" || rep.Repaired || rep.Buckets["api-tokens"] < 2 {
		t.Fatalf("check of a damaged store: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "wharf-server repair --data "+data) {
		t.Fatalf("check names no repair: %s", errOut)
	}
	if now, _ := os.ReadFile(db); !bytes.Equal(now, damaged) {
		t.Fatal("check changed server.db")
	}

	code, out, errOut = runServerFor(t, home, "repair")
	if code != 0 || !strings.Contains(out, "repaired:") || !strings.Contains(out, "kept as "+db+".damaged-") {
		t.Fatalf("repair: exit %d\n%s%s", code, out, errOut)
	}
	aside, _ := filepath.Glob(db + ".damaged-*")
	if len(aside) != 1 {
		t.Fatalf("damaged file kept as %v", aside)
	}
	if kept, _ := os.ReadFile(aside[0]); !bytes.Equal(kept, damaged) {
		t.Fatal("the file kept aside is not the damaged one")
	}
	if code, out, errOut := runServerFor(t, home, "check"); code != 0 || !strings.Contains(out, ": ok") {
		t.Fatalf("check after repair: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := runServerFor(t, home, "repair"); code != 0 || !strings.Contains(out, ": ok") {
		t.Fatalf("repair of a sound store: exit %d\n%s", code, out)
	}

	s = startServe(t, home)
	defer s.stop(t)
	if s.info.AdminToken != "" {
		t.Fatal("the repaired store lost its admin token: a new one was made")
	}
	if code, body := httpGet(t, s.info.URL+"/v1/policy/bundle", agent); code != 200 {
		t.Fatalf("the agent token after repair: %d %s", code, body)
	}
}
