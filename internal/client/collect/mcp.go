package collect

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/internal/core/inventory"
)

// mcpFile is the file WriteMCP writes (layout.Paths.MCPTools).
type mcpFile struct {
	Servers []inventory.MCPServer `json:"servers"`
}

// WriteMCP records what an agent session observed of its plugin MCP
// servers' tool definitions, for the next inventory report. The file is
// replaced crash-safely; the last session to load wins.
func WriteMCP(path string, servers []inventory.MCPServer) error {
	if servers == nil {
		servers = []inventory.MCPServer{}
	}
	raw, err := json.MarshalIndent(mcpFile{Servers: servers}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(raw, '\n'), 0o644)
}

// ReadMCP reads what WriteMCP recorded: nothing when no session recorded
// anything. A file that cannot be read, or that does not hold servers a
// report may carry, is an error naming it.
func ReadMCP(path string) ([]inventory.MCPServer, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f mcpFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("%s: %v; remove it, the next agent session writes it again", path, err)
	}
	// The checks a report's servers pass on the server.
	r := inventory.Report{MCPServers: f.Servers}
	if err := inventory.ValidateMCP(&r); err != nil {
		return nil, fmt.Errorf("%s: %v; remove it, the next agent session writes it again", path, err)
	}
	return r.MCPServers, nil
}
