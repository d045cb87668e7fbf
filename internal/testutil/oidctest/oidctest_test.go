package oidctest_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/wharfhq/wharf/internal/testutil/oidctest"
)

// The provider serves the device flow end to end: the device asks, the
// user approves on the provider's page, the device gets an ID token with
// the user's email and groups and a refresh token; the refresh token
// refreshes once (rotation) and revocation ends it.
func TestDeviceFlowRefreshRevoke(t *testing.T) {
	p := oidctest.New(t, oidctest.Options{
		Users:   []oidctest.User{{Subject: "ana", Email: "ana@example.com", Groups: []string{"data-team"}}},
		Clients: []oidctest.Client{{ID: "wharf-cli"}},
	})
	ctx := context.Background()
	prov, err := oidc.NewProvider(ctx, p.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &oauth2.Config{ClientID: "wharf-cli", Endpoint: prov.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "email", oidc.ScopeOfflineAccess}}
	da, err := cfg.DeviceAuth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ApproveDevice(ctx, da.UserCode, "nobody"); err == nil {
		t.Fatal("an unknown user approved a device code")
	}
	if err := p.ApproveDevice(ctx, da.UserCode, "ana"); err != nil {
		t.Fatal(err)
	}
	tok, err := cfg.DeviceAccessToken(ctx, da)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := prov.Verifier(&oidc.Config{ClientID: "wharf-cli"}).Verify(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Email  string   `json:"email"`
		Groups []string `json:"groups"`
	}
	if err := idt.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	if idt.Subject != "ana" || claims.Email != "ana@example.com" || len(claims.Groups) != 1 || claims.Groups[0] != "data-team" {
		t.Fatalf("ID token: sub %q claims %+v", idt.Subject, claims)
	}
	if tok.RefreshToken == "" || !p.RefreshTokenLive(tok.RefreshToken) {
		t.Fatal("no live refresh token")
	}
	old := tok.RefreshToken
	tok.Expiry = tok.Expiry.Add(-24 * 3600e9)
	next, err := cfg.TokenSource(ctx, tok).Token()
	if err != nil {
		t.Fatal(err)
	}
	if next.RefreshToken == old || p.RefreshTokenLive(old) || !p.RefreshTokenLive(next.RefreshToken) {
		t.Fatal("the refresh token did not rotate")
	}
	if _, ok := next.Extra("id_token").(string); !ok {
		t.Fatal("a refresh gave no ID token")
	}
	var meta struct {
		Revocation string `json:"revocation_endpoint"`
	}
	if err := prov.Claims(&meta); err != nil || meta.Revocation == "" {
		t.Fatalf("no revocation endpoint advertised (%v)", err)
	}
	resp, err := http.PostForm(meta.Revocation, url.Values{"token": {next.RefreshToken}, "token_type_hint": {"refresh_token"}, "client_id": {"wharf-cli"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || p.RefreshTokenLive(next.RefreshToken) {
		t.Fatalf("revocation: %s; live after: %v", resp.Status, p.RefreshTokenLive(next.RefreshToken))
	}
}
