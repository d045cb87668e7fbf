package policy

import (
	"context"
	"testing"
)

func TestSmoke(t *testing.T) {
	e, err := NewEngine([]Layer{{Name: "org", Settings: []byte(`{"blockedMarketplaces":["evil/*"],"enabledPlugins":{"a@m":true}}`)}})
	if err != nil {
		t.Fatal(err)
	}
	req, err := ParseRequest([]byte(`{"action":"install","plugin":"x@m","marketplace":{"name":"m","source":{"source":"github","repo":"evil/m"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.Decide(context.Background(), req)
	t.Logf("%+v %v", d, err)
	t.Log(e.AllowDisable(context.Background(), mustID("a@m")))
}
