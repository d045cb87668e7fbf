package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// httpFields reads an http hook's url, headers and allowedEnvVars from the
// keys the hooks parser keeps as written.
func httpFields(h *Hook, extra map[string]json.RawMessage) {
	_ = json.Unmarshal(extra["url"], &h.URL)
	_ = json.Unmarshal(extra["headers"], &h.Headers)
	_ = json.Unmarshal(extra["allowedEnvVars"], &h.AllowedEnvVars)
}

// runHTTP POSTs the event JSON to the hook's URL and reads the answer as a
// command hook's stdout: a 2xx response's body is the hook's output (JSON
// decisions included); any other status, a connection error or a timeout is
// a non-blocking error, as in Claude Code.
func (r *Runner) runHTTP(ctx context.Context, ev Event, o *Outcome) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = r.DefaultTimeout
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(tctx, http.MethodPost, o.URL, bytes.NewReader(ev.Raw))
	if err != nil {
		o.Error = "http hook: " + err.Error()
		return
	}
	req.Header.Set("Content-Type", "application/json")
	vars := r.allowedVars(o.Hook)
	for k, v := range o.Headers {
		req.Header.Set(k, os.Expand(v, func(name string) string { return vars[name] }))
	}
	client := r.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	start := time.Now()
	resp, err := client.Do(req)
	o.DurationMS = time.Since(start).Milliseconds()
	if err != nil {
		if tctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			o.TimedOut = true
			o.ExitCode = -1
			o.Error = fmt.Sprintf("http hook timed out after %s", timeout)
			return
		}
		o.Error = "http hook: " + err.Error()
		return
	}
	defer resp.Body.Close()
	o.Ran = true
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxOutput))
	if err != nil {
		o.Error = "http hook: reading the response: " + err.Error()
		return
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		o.Error = fmt.Sprintf("http hook: %s answered %s%s", o.URL, resp.Status, stderrNote(string(body)))
		return
	}
	spec, _ := SpecOf(ev.Name)
	parseOutput(o, spec, body)
}

// allowedVars is the environment an http hook's headers may read: only the
// variables it lists in allowedEnvVars.
func (r *Runner) allowedVars(h Hook) map[string]string {
	env := r.BaseEnv
	if env == nil {
		env = os.Environ()
	}
	all := map[string]string{}
	for _, kv := range append(append([]string(nil), env...), h.Env...) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			all[k] = v
		}
	}
	out := map[string]string{}
	for _, k := range h.AllowedEnvVars {
		if v, ok := all[k]; ok {
			out[k] = v
		}
	}
	return out
}
