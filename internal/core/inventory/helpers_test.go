package inventory_test

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/wharfhq/wharf/internal/core/inventory"
)

func machineID(n int) string { return fmt.Sprintf("m-%032x", n) }

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "w1:" + base64.StdEncoding.EncodeToString(sum[:])
}

func pl(id, version string) inventory.Plugin {
	return inventory.Plugin{ID: id, Version: version, Digest: digest(id + version), Scope: "user",
		Install: inventory.InstallUser, Enabled: true, State: inventory.StateActive}
}

func report(n int, plugins ...inventory.Plugin) inventory.Report {
	return inventory.Report{Machine: inventory.Machine{ID: machineID(n), Hostname: fmt.Sprintf("host%d", n), OS: "linux/amd64"},
		Client: inventory.Client{Kind: inventory.KindWharf, Version: "1.0.0"}, Plugins: plugins, Created: time.Now()}
}
