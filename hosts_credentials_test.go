package gateway

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSavedConfigKeyPairStaysHome: the AWS key pair and session token of a
// saved config are stored credentials, like its api_key: when the caller
// sends x-gateway-custom-host beside the config, the provider preparing the
// request to that host sees the caller's own settings, never the stored
// ones.
func TestSavedConfigKeyPairStaysHome(t *testing.T) {
	type hostSeen struct{ KeyID, Secret, Token, Region, APIKey string }
	var got []hostSeen
	up := newCoreUpstream(t, nil)
	env := newCoreEnv(t, up, func(o *Options) {
		o.Providers = map[string]Provider{"signing": ProviderFunc(func(pr *ProxyRequest) error {
			h := pr.Target.Host
			got = append(got, hostSeen{h.AccessKeyID, h.SecretAccessKey, h.SessionToken, h.Region, pr.Target.APIKey})
			pr.SetURL(pr.Target.BaseURL)
			return nil
		})}
	})
	env.store.AddConfig(SavedConfig{ID: "pc-signing", Config: json.RawMessage(`{"provider":"signing","api_key":"stored-api-key",
		"region":"eu-west-3","access_key_id":"AKIASTORED","secret_access_key":"stored-secret","session_token":"stored-token"}`)})

	tests := []struct {
		name string
		hdr  []string
		want hostSeen
	}{
		{"nothing of the caller's", nil, hostSeen{Region: "eu-west-3"}},
		{"the caller's own pair", []string{"Authorization: Bearer caller-token",
			HeaderHostCAccessKeyID + ": AKIACALLER", HeaderHostCSecretKey + ": caller-secret"},
			hostSeen{KeyID: "AKIACALLER", Secret: "caller-secret", Region: "eu-west-3", APIKey: "caller-token"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			hdr := append([]string{HeaderAPIKey + ": " + coreKey, HeaderConfig + ": pc-signing", HeaderCustomHost + ": " + up.URL}, tt.hdr...)
			res := env.do(http.MethodPost, "/v1/chat/completions", nil, hdr...)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want the custom host's 200", res.StatusCode)
			}
			if diff := cmp.Diff([]hostSeen{tt.want}, got); diff != "" {
				t.Errorf("settings the provider got for the caller's host (-want +got):\n%s", diff)
			}
		})
	}
}
