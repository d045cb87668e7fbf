// Package protocol serves the agent runtime over newline-delimited JSON on a
// pair of streams (`wharf agent serve --stdio`), with the control envelope
// of Claude Code's SDK:
//
//	→ {"type":"control_request","request_id":"r1","request":{"subtype":"status"}}
//	← {"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{...}}}
//	← {"type":"control_response","response":{"subtype":"error","request_id":"r1","error":"..."}}
//
// Rules (docs/protocol.md has the full text):
//
//   - Every request gets exactly one response carrying its request_id.
//     Requests are handled concurrently and may be answered out of order.
//   - A request whose request_id equals that of a request still in flight is
//     not run: it is answered at once with an error (carrying that id), and
//     the first request is answered normally. An id may be reused once its
//     response has been written.
//   - A line that is not JSON, not an object, or whose request_id is not a
//     string is answered with an error whose request_id is null; a line with
//     an unknown type or subtype gets an error with its request_id. The
//     session goes on either way.
//   - Lines are bounded (MaxLine, 8 MiB by default): a longer line is
//     answered with an error (request_id null) and skipped up to the next
//     newline. Partial lines are buffered across reads.
//   - Only protocol messages are written to the output stream, by one writer
//     goroutine; logs go to Server.Log.
//   - control_cancel_request {"request_id":"r1"} cancels an in-flight
//     request, which is then answered with an error; the cancel itself gets
//     no response.
package protocol

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
)

// DefaultMaxLine bounds a request line.
const DefaultMaxLine = 8 << 20

// Server answers requests read from one stream on another.
type Server struct {
	Backend Backend
	// MaxLine bounds one request line in bytes (default DefaultMaxLine).
	MaxLine int
	// MaxInFlight bounds the requests handled at once (default 64); reading
	// pauses while the bound is reached.
	MaxInFlight int
	// Log receives diagnostics (default io.Discard). Never the output stream.
	Log io.Writer
	// Info names this server in initialize.
	Info Implementation
}

// session is the state of one Serve call.
type session struct {
	s        *Server
	ctx      context.Context
	out      chan []byte
	wg       sync.WaitGroup
	sem      chan struct{}
	mu       sync.Mutex
	flight   map[string]context.CancelFunc
	stopping bool // no new request starts; guarded by mu

	quit       chan struct{} // tells the writer to drain and stop
	writerDone chan struct{} // closed when the writer has stopped
}

// Serve reads requests from in and writes responses to out until in ends or
// ctx is canceled, waits for every request in flight to be answered (on
// cancellation they are canceled first and answer with an error), and
// returns nil. It returns the first error writing to out, or reading from
// in. On cancellation it does not wait for a Read blocked on in: that
// goroutine ends when in is closed.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	if s.Log == nil {
		s.Log = io.Discard
	}
	maxInFlight := s.MaxInFlight
	if maxInFlight <= 0 {
		maxInFlight = 64
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ss := &session{s: s, ctx: ctx, out: make(chan []byte, 64), sem: make(chan struct{}, maxInFlight),
		flight: map[string]context.CancelFunc{}, quit: make(chan struct{}), writerDone: make(chan struct{})}

	writeErr := make(chan error, 1)
	go func() {
		writeErr <- ss.writeLoop(out, cancel)
		close(ss.writerDone)
	}()
	readDone := make(chan error, 1)
	go func() { readDone <- ss.readLoop(in) }()

	var readErr error
	select {
	case readErr = <-readDone:
	case <-ctx.Done():
	}
	ss.mu.Lock()
	ss.stopping = true
	ss.mu.Unlock()
	ss.wg.Wait()
	close(ss.quit)
	werr := <-writeErr
	if werr != nil {
		return werr
	}
	if readErr != nil && ctx.Err() == nil {
		return readErr
	}
	return nil
}

// writeLoop is the one writer of out: each message is one line. After quit
// it writes what is queued and stops.
func (ss *session) writeLoop(out io.Writer, cancel context.CancelFunc) error {
	w := bufio.NewWriterSize(out, 64<<10)
	var err error
	write := func(msg []byte) {
		if err != nil {
			return // keep draining so senders never block
		}
		w.Write(msg)
		w.WriteByte('\n')
		if len(ss.out) == 0 {
			err = w.Flush()
		}
		if err != nil {
			fmt.Fprintf(ss.s.Log, "wharf agent serve: writing responses: %v; stopping\n", err)
			cancel()
		}
	}
	for {
		select {
		case msg := <-ss.out:
			write(msg)
		case <-ss.quit:
			for {
				select {
				case msg := <-ss.out:
					write(msg)
				default:
					if err == nil {
						err = w.Flush()
					}
					return err
				}
			}
		}
	}
}

// readLoop reads lines, bounded, and dispatches each.
func (ss *session) readLoop(in io.Reader) error {
	max := ss.s.MaxLine
	if max <= 0 {
		max = DefaultMaxLine
	}
	r := bufio.NewReaderSize(in, 64<<10)
	var line []byte
	lineNo := 0
	skipping := false
	// A canceled context stops the loop at the next line; a Read blocked on
	// in returns only when in has data or is closed (the caller owns in).
	for {
		if ss.ctx.Err() != nil {
			return ss.ctx.Err()
		}
		chunk, err := r.ReadSlice('\n')
		complete := err == nil
		if !skipping {
			if len(line)+len(chunk) > max+1 { // +1: the newline itself
				skipping = true
				lineNo++
				line = line[:0]
				ss.reply(nil, nil, fmt.Errorf("line %d is longer than %d bytes; it was dropped up to the next newline (send smaller requests)", lineNo, max))
			} else {
				line = append(line, chunk...)
			}
		}
		if complete {
			if skipping {
				skipping = false
			} else {
				lineNo++
				ss.handleLine(lineNo, bytes.TrimSpace(line))
				line = line[:0]
			}
			continue
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == io.EOF {
			if !skipping && len(bytes.TrimSpace(line)) > 0 {
				lineNo++
				ss.handleLine(lineNo, bytes.TrimSpace(line))
			}
			return nil
		}
		return err
	}
}

// envelope is what a line is parsed into first.
type envelope struct {
	Type      string          `json:"type"`
	RequestID json.RawMessage `json:"request_id"`
	Request   json.RawMessage `json:"request"`
}

// handleLine parses one line and starts its request.
func (ss *session) handleLine(n int, line []byte) {
	if len(line) == 0 {
		return // blank lines are allowed between messages
	}
	if line[0] != '{' && json.Valid(line) {
		ss.reply(nil, nil, fmt.Errorf("line %d is a JSON %s, not an object; send one control_request object per line", n, jsonKind(line[0])))
		return
	}
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil {
		ss.reply(nil, nil, fmt.Errorf("line %d is not a JSON object: %v", n, jsonErr(err)))
		return
	}
	var id *string
	if len(env.RequestID) > 0 && string(env.RequestID) != "null" {
		var s string
		if err := json.Unmarshal(env.RequestID, &s); err != nil {
			ss.reply(nil, nil, fmt.Errorf("line %d: request_id must be a string, got %s", n, truncate(string(env.RequestID), 40)))
			return
		}
		id = &s
	}
	switch env.Type {
	case TypeControlRequest:
	case TypeControlCancelRequest:
		if id != nil {
			ss.mu.Lock()
			if cancel, ok := ss.flight[*id]; ok {
				cancel()
			}
			ss.mu.Unlock()
		}
		return
	case "":
		ss.reply(id, nil, fmt.Errorf("line %d has no \"type\"; requests are {\"type\":\"control_request\",\"request_id\":...,\"request\":{\"subtype\":...}}", n))
		return
	default:
		ss.reply(id, nil, fmt.Errorf("line %d: unknown message type %q; this server reads control_request and control_cancel_request", n, truncate(env.Type, 60)))
		return
	}
	if id == nil {
		ss.reply(nil, nil, fmt.Errorf("line %d: control_request needs a string request_id", n))
		return
	}
	var sub struct {
		Subtype string `json:"subtype"`
	}
	if len(env.Request) == 0 || env.Request[0] != '{' {
		ss.reply(id, nil, fmt.Errorf("request %q: \"request\" must be an object with a subtype", *id))
		return
	}
	if err := json.Unmarshal(env.Request, &sub); err != nil {
		ss.reply(id, nil, fmt.Errorf("request %q: subtype: %v", *id, jsonErr(err)))
		return
	}
	m, ok := lookupMethod(sub.Subtype)
	if !ok {
		ss.reply(id, nil, fmt.Errorf("request %q: unknown subtype %q; known: %v", *id, truncate(sub.Subtype, 60), Subtypes()))
		return
	}

	ctx, cancel := context.WithCancel(ss.ctx)
	ss.mu.Lock()
	if ss.stopping {
		ss.mu.Unlock()
		cancel()
		return
	}
	if _, dup := ss.flight[*id]; dup {
		ss.mu.Unlock()
		cancel()
		ss.reply(id, nil, fmt.Errorf("duplicate request_id %q: a request with this id is still in flight; this one was not run (the first will be answered)", *id))
		return
	}
	ss.flight[*id] = cancel
	ss.wg.Add(1)
	ss.mu.Unlock()

	select {
	case ss.sem <- struct{}{}:
	case <-ss.ctx.Done():
		ss.mu.Lock()
		delete(ss.flight, *id)
		ss.mu.Unlock()
		cancel()
		ss.reply(id, nil, fmt.Errorf("request %q not run: the server is stopping", *id))
		ss.wg.Done()
		return
	}
	go func() {
		defer ss.wg.Done()
		defer func() { <-ss.sem }()
		resp, err := ss.call(ctx, m, env.Request)
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("request %q canceled: %w", *id, err)
		}
		// The id leaves the flight table before its response is queued, so
		// a client that reuses it after reading the response is not refused.
		ss.mu.Lock()
		delete(ss.flight, *id)
		ss.mu.Unlock()
		cancel()
		ss.reply(id, resp, err)
	}()
}

// call runs a handler; a panic becomes an error response, never a crash.
func (ss *session) call(ctx context.Context, m method, raw json.RawMessage) (resp any, err error) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(ss.s.Log, "wharf agent serve: %s panicked: %v\n%s", m.subtype, p, debug.Stack())
			resp, err = nil, fmt.Errorf("internal error in %s: %v", m.subtype, p)
		}
	}()
	return m.call(ctx, ss.s, raw)
}

// reply queues the one response of a request.
func (ss *session) reply(id *string, resp any, err error) {
	body := ResponseBody{Subtype: SubtypeSuccess, RequestID: id, Response: resp}
	if err != nil {
		body = ResponseBody{Subtype: SubtypeError, RequestID: id, Error: err.Error()}
		if id == nil {
			fmt.Fprintf(ss.s.Log, "wharf agent serve: %v\n", err)
		}
	}
	b, merr := json.Marshal(ControlResponse{Type: TypeControlResponse, Response: body})
	if merr != nil {
		b, _ = json.Marshal(ControlResponse{Type: TypeControlResponse, Response: ResponseBody{Subtype: SubtypeError, RequestID: id, Error: "encoding the response: " + merr.Error()}})
	}
	select {
	case ss.out <- b:
	case <-ss.writerDone:
		// The session is over; a line read after the end gets no answer.
	}
}

func (s *Server) initialize(req InitializeRequest) (*InitializeResponse, error) {
	if req.ProtocolVersion > Version {
		return nil, fmt.Errorf("protocol version %d is newer than this server's (%d); upgrade wharf", req.ProtocolVersion, Version)
	}
	max := s.MaxLine
	if max <= 0 {
		max = DefaultMaxLine
	}
	info := s.Info
	if info.Name == "" {
		info.Name = "wharf"
	}
	return &InitializeResponse{ProtocolVersion: Version, Server: info, Subtypes: Subtypes(), MaxLineBytes: max, Mode: s.Backend.Mode()}, nil
}

// decodeRequest decodes a request object into v. Unknown fields are
// ignored, so a newer client can talk to an older server.
func decodeRequest(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("request fields: %v", jsonErr(err))
	}
	return nil
}

func jsonErr(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("field %s must be %s, got %s", te.Field, te.Type, te.Value)
		}
		return fmt.Sprintf("expected %s, got %s", te.Type, te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	}
	return err.Error()
}

func jsonKind(first byte) string {
	switch first {
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
