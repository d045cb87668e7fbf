package protocol

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"time"
)

//go:generate go test -run TestSchemaUpToDate -update .

// Schema returns the JSON Schema (draft 2020-12) of every message of the
// protocol, generated from the Go types of this package and the method
// table, so the documentation cannot drift from the code.
// docs/protocol.schema.json is this output; a test keeps it current.
func Schema() ([]byte, error) {
	g := &schemaGen{defs: map[string]any{}}
	var clientRefs, serverRefs []any
	for _, m := range methods {
		req := g.inline(m.req)
		props := req["properties"].(map[string]any)
		props["subtype"] = map[string]any{"const": m.subtype}
		req["required"] = append([]any{"subtype"}, req["required"].([]any)...)
		reqName := "request." + m.subtype
		g.defs[reqName] = map[string]any{
			"description": m.doc,
			"type":        "object",
			"properties": map[string]any{
				"type":       map[string]any{"const": TypeControlRequest},
				"request_id": map[string]any{"type": "string", "description": "chosen by the client; echoed in the response; must not equal the id of a request still in flight"},
				"request":    req,
			},
			"required": []any{"type", "request_id", "request"},
		}
		clientRefs = append(clientRefs, ref(reqName))

		respName := "response." + m.subtype
		g.defs[respName] = map[string]any{
			"description": "The success response to " + m.subtype + ".",
			"type":        "object",
			"properties": map[string]any{
				"type": map[string]any{"const": TypeControlResponse},
				"response": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"subtype":    map[string]any{"const": SubtypeSuccess},
						"request_id": map[string]any{"type": "string"},
						"response":   g.of(m.resp),
					},
					"required": []any{"subtype", "request_id", "response"},
				},
			},
			"required": []any{"type", "response"},
		}
		serverRefs = append(serverRefs, ref(respName))
	}
	cancel := g.withDoc(g.inline(reflect.TypeFor[CancelRequest]()), "Cancels an in-flight request, which is then answered with an error. No response of its own.")
	cancel["properties"].(map[string]any)["type"] = map[string]any{"const": TypeControlCancelRequest}
	g.defs["cancel"] = cancel
	clientRefs = append(clientRefs, ref("cancel"))
	g.defs["response.error"] = map[string]any{
		"description": "The error response to any request, or to a line that could not be read (request_id null).",
		"type":        "object",
		"properties": map[string]any{
			"type": map[string]any{"const": TypeControlResponse},
			"response": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"subtype":    map[string]any{"const": SubtypeError},
					"request_id": map[string]any{"type": []any{"string", "null"}},
					"error":      map[string]any{"type": "string"},
				},
				"required": []any{"subtype", "request_id", "error"},
			},
		},
		"required": []any{"type", "response"},
	}
	serverRefs = append(serverRefs, ref("response.error"))
	g.defs["ClientMessage"] = map[string]any{"description": "A line the client writes.", "oneOf": clientRefs}
	g.defs["ServerMessage"] = map[string]any{"description": "A line the server writes.", "oneOf": serverRefs}
	doc := map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"title":       "wharf agent protocol",
		"description": "Newline-delimited JSON over stdio (wharf agent serve --stdio), protocol version 1. Each line is one ClientMessage (client to server) or ServerMessage (server to client). Generated from the Go types of package agent/protocol; do not edit.",
		"oneOf":       []any{ref("ClientMessage"), ref("ServerMessage")},
		"$defs":       g.defs,
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/$defs/" + name} }

type schemaGen struct {
	defs map[string]any
}

var (
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	rawMessage    = reflect.TypeFor[json.RawMessage]()
	timeType      = reflect.TypeFor[time.Time]()
	durationType  = reflect.TypeFor[time.Duration]()
)

func (g *schemaGen) withDoc(s map[string]any, doc string) map[string]any {
	if doc != "" {
		s["description"] = doc
	}
	return s
}

// defName names a struct type in $defs: bare for this package's types,
// package-qualified for others.
func defName(t reflect.Type) string {
	pkg := t.PkgPath()
	if strings.HasSuffix(pkg, "/agent/protocol") {
		return t.Name()
	}
	return pkg[strings.LastIndexByte(pkg, '/')+1:] + "." + t.Name()
}

// of returns the schema of t: a $ref for named structs (added to defs once).
func (g *schemaGen) of(t reflect.Type) map[string]any {
	switch {
	case t == rawMessage:
		return map[string]any{}
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == durationType:
		return map[string]any{"type": "integer"}
	case t.Kind() != reflect.Pointer && t.Implements(textMarshaler):
		return map[string]any{"type": "string"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.of(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": g.of(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.of(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		if t.Name() == "" {
			return g.inline(t)
		}
		name := defName(t)
		if _, ok := g.defs[name]; !ok {
			g.defs[name] = nil // placeholder against recursion
			g.defs[name] = g.inline(t)
		}
		return ref(name)
	}
	return map[string]any{}
}

// inline returns the object schema of struct t, with embedded structs'
// fields promoted as encoding/json does.
func (g *schemaGen) inline(t reflect.Type) map[string]any {
	props := map[string]any{}
	required := []any{}
	g.fields(t, props, &required)
	return map[string]any{"type": "object", "properties": props, "required": required}
}

func (g *schemaGen) fields(t reflect.Type, props map[string]any, required *[]any) {
	g.fieldsHiding(t, props, required, nil)
}

// fieldsHiding lists t's fields as encoding/json does, leaving out those an
// outer struct's field of the same Go name hides (hidden).
func (g *schemaGen) fieldsHiding(t reflect.Type, props map[string]any, required *[]any, hidden map[string]bool) {
	outer := map[string]bool{}
	for name := range hidden {
		outer[name] = true
	}
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); !f.Anonymous {
			outer[f.Name] = true
		}
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if hidden[f.Name] {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				g.fieldsHiding(ft, props, required, outer)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s := g.of(f.Type)
		if doc := f.Tag.Get("doc"); doc != "" {
			if _, isRef := s["$ref"]; isRef {
				s = map[string]any{"allOf": []any{s}, "description": doc}
			} else {
				s["description"] = doc
			}
		}
		omit := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		if f.Type.Kind() == reflect.Pointer && !omit {
			s = map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
		}
		if (f.Type.Kind() == reflect.Slice || f.Type.Kind() == reflect.Map) && !omit {
			// encoding/json writes a nil slice or map as null.
			s = map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
		}
		props[name] = s
		if !omit {
			*required = append(*required, name)
		}
	}
}
