package users_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/users"
)

// BenchmarkKeys: finding an API key through users.Keys costs what the
// key store alone costs (the people's store is asked only for keys it
// does not hold); a session key costs a session, user and membership
// lookup.
func BenchmarkKeys(b *testing.B) {
	st := memstore.New()
	st.AddAPIKey(gateway.APIKey{ID: "k", Digest: gateway.HashAPIKey("gw-bench"), WorkspaceID: "ws-1", Role: gateway.RoleAdmin})
	ctx := context.Background()
	u := &users.User{ID: "u1", Email: "a@example.com", Role: users.RoleMember}
	if err := st.CreateUser(ctx, u); err != nil {
		b.Fatal(err)
	}
	if err := st.PutMember(ctx, &users.Member{WorkspaceID: "ws-1", UserID: "u1", Role: users.WorkspaceMember}); err != nil {
		b.Fatal(err)
	}
	session, err := users.NewSessionKey(ctx, st, u, time.Now(), time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	apiKey, sessionKey := gateway.HashAPIKey("gw-bench"), gateway.HashAPIKey(session)
	wrapped := users.Keys(st, st)
	for _, c := range []struct {
		name string
		ks   gateway.KeyStore
		d    [32]byte
	}{
		{"api-key/store-alone", st, apiKey},
		{"api-key/through-Keys", wrapped, apiKey},
		{"session-key", wrapped, sessionKey},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.ks.APIKey(ctx, c.d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
