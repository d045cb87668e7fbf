package plugin

import (
	"fmt"
	"io"
	"os"
)

// The JSON files of the plugin formats (marketplace.json, plugin.json,
// hooks.json, .mcp.json, .lsp.json) are read and parsed the same way: a
// size limit (MaxManifestSize) checked before anything is read whole, a
// regular file only, a JSON tree that skips a UTF-8 byte order mark and
// reports syntax errors with line and column, a decoder that collects
// every problem as a Diagnostic, and one typed error naming the file
// (parseErrorFor). This file holds that shared prologue and epilogue; each
// Parse* only says how to decode its tree.

// readManifestFile reads a file of at most MaxManifestSize bytes without
// reading a larger one whole. It refuses anything but a regular file (a FIFO
// would block forever).
func readManifestFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, &Error{Layer: LayerMaterialization, Type: TypeNotFound, Object: path, Err: err}
	}
	if !fi.Mode().IsRegular() {
		return nil, parseErrorFor(path, fmt.Errorf("%s is not a regular file", path))
	}
	if fi.Size() > MaxManifestSize {
		return nil, parseErrorFor(path, &SizeError{File: path, Size: fi.Size(), Limit: MaxManifestSize})
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{Layer: LayerMaterialization, Type: TypeNotFound, Object: path, Err: err}
	}
	defer f.Close()
	data, err := readSized(io.LimitReader(f, MaxManifestSize+1), fi.Size())
	if err != nil {
		return nil, &Error{Layer: LayerMaterialization, Type: TypeManifestParse, Object: path, Err: err}
	}
	if int64(len(data)) > MaxManifestSize { // grew after the stat
		return nil, parseErrorFor(path, &SizeError{File: path, Size: MaxManifestSize + 1, Limit: MaxManifestSize})
	}
	return data, nil
}

// readSized reads r to its end into a buffer sized for the size a stat
// reported, plus one byte to see the end without growing. io.ReadAll starts
// at 512 bytes and doubles, which for a marketplace of 50 KB allocates and
// copies three times its size; a session start reads one per marketplace.
func readSized(r io.Reader, size int64) ([]byte, error) {
	data := make([]byte, 0, min(max(size, 0), MaxManifestSize)+1)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // the file grew after the stat
		}
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return data, err
		}
	}
}

// openDocument is the prologue of every parse: the size limit and the JSON
// tree, with a decoder on it. Its errors are *SizeError and *SyntaxError,
// unwrapped: the parsers wrap them with parseErrorFor, the validator turns
// them into diagnostics.
func openDocument(data []byte, file string) (*node, *decoder, error) {
	if int64(len(data)) > MaxManifestSize {
		return nil, nil, &SizeError{File: file, Size: int64(len(data)), Limit: MaxManifestSize}
	}
	n, err := parseJSON(data, file)
	if err != nil {
		return nil, nil, err
	}
	return n, newDecoder(file, data), nil
}

// parseDocument parses data, the contents of file, with decode. Errors are
// *Error{Layer: LayerMaterialization, Type: TypeManifestParse} naming file
// and wrapping a *SyntaxError, *FieldError (the first error diagnostic) or
// *SizeError; on error the value is the zero T. Warnings are returned
// either way.
func parseDocument[T any](data []byte, file string, decode func(*decoder, *node) T) (T, []Diagnostic, error) {
	var zero T
	n, d, err := openDocument(data, file)
	if err != nil {
		return zero, nil, parseErrorFor(file, err)
	}
	v := decode(d, n)
	diags := d.finish()
	if fe := firstError(diags); fe != nil {
		return zero, diags, parseErrorFor(file, fe)
	}
	return v, diags, nil
}

// readDocument reads the file at path (readManifestFile) and parses it.
func readDocument[T any](path string, parse func([]byte, string) (T, []Diagnostic, error)) (T, []Diagnostic, error) {
	data, err := readManifestFile(path)
	if err != nil {
		var zero T
		return zero, nil, err
	}
	return parse(data, path)
}
