package apiclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// LayerHistory follows the server's pages, keeping the layer it asked for.
func TestLayerHistoryFollowsPages(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/policy/history" || r.URL.Query().Get("layer") != "eng" {
			http.Error(w, "wrong request "+r.URL.String(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Query().Get("cursor") {
		case "":
			_ = json.NewEncoder(w).Encode(map[string]any{"entries": []LayerHistoryEntry{{Seq: 1, Layer: "eng", Action: "create"}}, "next": "1"})
		case "1":
			_ = json.NewEncoder(w).Encode(map[string]any{"entries": []LayerHistoryEntry{{Seq: 2, Layer: "eng", Action: "delete"}}})
		}
	}))
	defer hs.Close()
	cl, err := New(hs.URL, "tok", nil)
	if err != nil {
		t.Fatal(err)
	}
	es, err := cl.LayerHistory(context.Background(), "eng")
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].Action != "create" || es[1].Action != "delete" {
		t.Fatalf("history = %+v, want the create then the delete", es)
	}
}

// A server that sends the same cursor again ends the listing rather than
// keeping the client busy.
func TestLayerHistoryStuckCursor(t *testing.T) {
	calls := 0
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		_ = json.NewEncoder(w).Encode(map[string]any{"entries": []LayerHistoryEntry{{Seq: 1}}, "next": "1"})
	}))
	defer hs.Close()
	cl, err := New(hs.URL, "tok", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.LayerHistory(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Fatalf("%d requests for a cursor that does not move, want 2", calls)
	}
}
