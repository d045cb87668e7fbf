package plugin

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// parsers are every Parse* of the JSON formats, with a minimal valid
// document of each.
var parsers = []struct {
	name  string
	valid string
	parse func(data []byte, file string) (any, []Diagnostic, error)
}{
	{"marketplace", `{"name":"m","owner":{"name":"o"},"plugins":[]}`,
		func(d []byte, f string) (any, []Diagnostic, error) { return ParseMarketplace(d, f) }},
	{"manifest", `{"name":"p"}`,
		func(d []byte, f string) (any, []Diagnostic, error) { return ParseManifest(d, f) }},
	{"hooks", `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"x"}]}]}}`,
		func(d []byte, f string) (any, []Diagnostic, error) { return ParseHooks(d, f) }},
	{"mcp", `{"mcpServers":{"db":{"command":"db"}}}`,
		func(d []byte, f string) (any, []Diagnostic, error) { return ParseMCPServers(d, f) }},
	{"lsp", `{"go":{"command":"gopls","extensionToLanguage":{".go":"go"}}}`,
		func(d []byte, f string) (any, []Diagnostic, error) { return ParseLSPServers(d, f) }},
}

// TestParsersShareOnePrologue: every format's parser skips a byte order
// mark, refuses an oversized document and a syntax error the same way,
// with one typed error naming the file and the next step.
func TestParsersShareOnePrologue(t *testing.T) {
	for _, p := range parsers {
		t.Run(p.name, func(t *testing.T) {
			file := filepath.Join("dir", p.name+".json")
			if _, _, err := p.parse(append([]byte("\xEF\xBB\xBF"), p.valid...), file); err != nil {
				t.Errorf("document with a byte order mark refused: %v", err)
			}
			big := append([]byte(p.valid), bytes.Repeat([]byte(" "), MaxManifestSize)...)
			_, diags, err := p.parse(big, file)
			var se *SizeError
			checkParseError(t, err, file)
			if !errors.As(err, &se) || se.File != file || se.Limit != MaxManifestSize || diags != nil {
				t.Errorf("oversized document: %v (diagnostics %v)", err, diags)
			}
			_, _, err = p.parse([]byte("{\n  \"name\": }"), file)
			var syn *SyntaxError
			checkParseError(t, err, file)
			if !errors.As(err, &syn) || syn.Line != 2 || syn.File != file {
				t.Errorf("syntax error: %v", err)
			}
		})
	}
}

func checkParseError(t *testing.T, err error, file string) {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) || pe.Type != TypeManifestParse || pe.Layer != LayerMaterialization || pe.Object != file ||
		!strings.Contains(pe.Hint, "wharf validate "+file) {
		t.Errorf("error %#v is not a manifest-parse error naming %s with a hint", err, file)
	}
}

// TestReadDocumentRefusesWhatIsNotAFile: reading goes through the same
// checks for every format that is read from a file.
func TestReadDocumentRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := ReadMarketplaceFile(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory read as a marketplace: %v", err)
	}
	missing := filepath.Join(dir, "missing.json")
	var pe *Error
	if _, _, err := readDocument(missing, ParseManifest); !errors.As(err, &pe) || pe.Type != TypeNotFound || pe.Object != missing {
		t.Errorf("missing file: %v", err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, bytes.Repeat([]byte(" "), MaxManifestSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	var se *SizeError
	if _, _, err := readDocument(big, ParseHooks); !errors.As(err, &se) || se.File != big {
		t.Errorf("oversized file: %v", err)
	}
}
