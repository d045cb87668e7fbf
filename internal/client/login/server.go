package login

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wharfhq/wharf/internal/core/apiclient"
	"github.com/wharfhq/wharf/internal/core/atomicfile"
)

// ServerFileName is the home's server setting: the wharf server that
// `wharf login` or `wharf policy pull --server` recorded, whose policy
// later commands enforce without flags. It adds a policy server; it
// never removes one the managed settings name.
const ServerFileName = "server.json"

type serverFile struct {
	Server string `json:"server"`
}

// RecordServer records server (an http(s) base URL) as home's server.
func RecordServer(home, server string) error {
	cl, err := apiclient.New(server, "", nil)
	if err != nil {
		return err
	}
	raw, err := json.MarshalIndent(serverFile{Server: cl.Base}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(home, ServerFileName), append(raw, '\n'), 0o644)
}

// RecordedServer is home's recorded server, "" when none.
func RecordedServer(home string) (string, error) {
	p := filepath.Join(home, ServerFileName)
	raw, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var f serverFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return "", &CorruptError{p, err}
	}
	if strings.TrimSpace(f.Server) == "" {
		return "", nil
	}
	cl, err := apiclient.New(f.Server, "", nil)
	if err != nil {
		return "", &CorruptError{p, fmt.Errorf("server: %w", err)}
	}
	return cl.Base, nil
}
