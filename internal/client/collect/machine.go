package collect

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/plugin"
)

// ClaudeMachineIDFile is the file, under a Claude Code home, holding the
// id its reports use (a Claude Code machine is reported apart from any
// wharf home on the same machine).
const ClaudeMachineIDFile = "wharf-machine-id"

// TypeMachineID is the error type of a machine-id file that is not one.
const TypeMachineID = "machine-id-invalid"

// ValidMachineID reports whether s is "m-" and 32 lowercase hex digits.
func ValidMachineID(s string) bool { return inventory.ValidMachineID(s) }

// NewMachineID returns a fresh random machine id.
func NewMachineID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "m-" + hex.EncodeToString(b[:]), nil
}

// MachineID returns the id kept in path, creating it once (mode 0600,
// written whole or not at all) when it does not exist. Two processes
// creating it at once agree: the first file to land wins and the other
// reads it. A file that holds something else is an error naming it.
func MachineID(path string) (string, error) {
	if id, err := readMachineID(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return id, err
	}
	id, err := NewMachineID()
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", machineErr(path, err, "make the directory writable, or give a home this user owns")
	}
	// Write a complete file aside, then link it into place: the link fails
	// when another process created the file first, and then its id wins.
	tmp := path + "." + id[2:10] + ".tmp"
	if err := atomicfile.WriteFile(tmp, []byte(id+"\n"), 0o600); err != nil {
		return "", machineErr(path, err, "make the directory writable, or give a home this user owns")
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readMachineID(path)
		}
		// A file system without hard links: rename, which replaces only
		// if the file appeared meanwhile.
		if _, serr := os.Stat(path); serr == nil {
			return readMachineID(path)
		}
		if err := os.Rename(tmp, path); err != nil {
			return "", machineErr(path, err, "make the directory writable, or give a home this user owns")
		}
	}
	_ = atomicfile.SyncDir(dir)
	return readMachineID(path)
}

func readMachineID(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		return "", machineErr(path, err, "make the file readable by this user")
	}
	id := strings.TrimSpace(string(b))
	if !ValidMachineID(id) {
		return "", &plugin.Error{Layer: plugin.LayerMaterialization, Type: TypeMachineID, Object: path,
			Err:  fmt.Errorf("machine id %q is not \"m-\" and 32 lowercase hex digits", truncate(id, 40)),
			Hint: "remove the file: a new id is made on the next report (the server then sees a new machine)"}
	}
	return id, nil
}

func machineErr(path string, err error, hint string) error {
	return &plugin.Error{Layer: plugin.LayerMaterialization, Type: TypeMachineID, Object: path, Err: err, Hint: hint}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
