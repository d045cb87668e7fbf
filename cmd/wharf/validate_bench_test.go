package main

import (
	"context"
	"os"
	"testing"
)

// BenchmarkValidateDir runs wharf validate's checks on the marketplace or
// plugin directory named by WHARF_VALIDATE_DIR, in process, for
// -cpuprofile (the 295-plugin marketplace of bench/validate.sh is built by
// `go run ./bench/capabilitybench -build DIR`); skipped without it.
func BenchmarkValidateDir(b *testing.B) {
	dir := os.Getenv("WHARF_VALIDATE_DIR")
	if dir == "" {
		b.Skip("WHARF_VALIDATE_DIR not set")
	}
	for b.Loop() {
		if res, _ := validatePath(context.Background(), dir, validateOptions{}); res == nil {
			b.Fatal("no result")
		}
	}
}
