package guardrail

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxAnswer bounds the body the webhook and jwt checks read.
const maxAnswer = 1 << 20

// reservedHeaders are the headers a webhook's parameters may not set.
var reservedHeaders = map[string]bool{"Host": true, "Content-Length": true, "Transfer-Encoding": true,
	"Connection": true, "Content-Type": true, "Te": true, "Trailer": true, "Upgrade": true}

type webhook struct {
	client      *http.Client
	url         string
	header      http.Header
	timeout     time.Duration
	failOnError bool
}

func webhookFactory(client *http.Client) Factory {
	return func(params json.RawMessage) (Check, error) {
		var p struct {
			WebhookURL  string            `json:"webhookURL"`
			Headers     map[string]string `json:"headers"`
			Timeout     *int              `json:"timeout"`
			FailOnError bool              `json:"failOnError"`
		}
		if err := DecodeParameters(params, &p); err != nil {
			return nil, err
		}
		if err := httpURL(p.WebhookURL); err != nil {
			return nil, paramError("webhookURL", err.Error())
		}
		w := &webhook{client: client, url: p.WebhookURL, header: http.Header{}, timeout: 3 * time.Second, failOnError: p.FailOnError}
		if w.client == nil {
			w.client = http.DefaultClient
		}
		if p.Timeout != nil {
			if *p.Timeout < 1 || *p.Timeout > 60000 {
				return nil, paramError("timeout", "must be from 1 to 60000 milliseconds")
			}
			w.timeout = time.Duration(*p.Timeout) * time.Millisecond
		}
		for k, v := range p.Headers {
			ck := http.CanonicalHeaderKey(k)
			if !validHeaderName(k) || reservedHeaders[ck] || strings.ContainsAny(v, "\r\n\x00") {
				return nil, paramError("headers", "holds a header "+quote(k)+" the webhook cannot send")
			}
			w.header.Set(ck, v)
		}
		return w, nil
	}
}

// httpURL checks that u is an absolute http or https URL with a host.
func httpURL(u string) error {
	p, err := url.Parse(u)
	if u == "" || err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return errors.New("must be an absolute http or https URL")
	}
	return nil
}

func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(isAlnum(c) || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// Timeout returns the webhook's time limit.
func (w *webhook) Timeout() time.Duration { return w.timeout }

// webhookRequest is what the webhook receives: the request or answer
// being checked, never the caller's headers.
type webhookRequest struct {
	EventType   Phase             `json:"eventType"`
	RequestType string            `json:"requestType,omitempty"`
	Model       string            `json:"model,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	Request     webhookBody       `json:"request"`
	Response    webhookBody       `json:"response"`
}

type webhookBody struct {
	JSON json.RawMessage `json:"json"`
	Text string          `json:"text,omitempty"`
}

// Check posts the request or answer to the webhook, which answers
// {"verdict": bool, "explanation"?: string}. A webhook that cannot be
// reached, passes its timeout or answers otherwise makes the check fail
// when failOnError is set, and err otherwise (the guardrail's on_error
// then decides).
func (w *webhook) Check(ctx context.Context, in *Input) (Verdict, error) {
	v, err := w.call(ctx, in)
	if err != nil && w.failOnError {
		return Verdict{Explanation: "The webhook failed: " + err.Message + "."}, nil
	}
	if err != nil {
		return Verdict{}, err
	}
	return v, nil
}

func (w *webhook) call(ctx context.Context, in *Input) (Verdict, *Error) {
	wr := webhookRequest{EventType: in.Phase, RequestType: in.RequestType, Model: in.Model, Metadata: in.Metadata,
		Request: webhookBody{JSON: in.Request}, Response: webhookBody{JSON: in.Response}}
	if in.Phase == AfterRequest {
		wr.Response.Text = in.Text
	} else {
		wr.Request.Text = in.Text
	}
	if wr.Request.JSON == nil {
		wr.Request.JSON = json.RawMessage("null")
	}
	if wr.Response.JSON == nil {
		wr.Response.JSON = json.RawMessage("null")
	}
	body, err := json.Marshal(wr)
	if err != nil {
		return Verdict{}, &Error{Message: "the request could not be encoded"}
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return Verdict{}, &Error{Message: "the webhook URL is unusable"}
	}
	for k, v := range w.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		return Verdict{}, transportError(ctx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return Verdict{}, transportError(ctx, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Verdict{}, &Error{Message: "the webhook answered " + strconv.Itoa(resp.StatusCode)}
	}
	var a struct {
		Verdict     *bool  `json:"verdict"`
		Explanation string `json:"explanation"`
	}
	if json.Unmarshal(data, &a) != nil || a.Verdict == nil {
		return Verdict{}, &Error{Message: "the webhook's answer holds no boolean verdict"}
	}
	v := Verdict{Pass: *a.Verdict, Explanation: "The webhook's verdict."}
	if a.Explanation != "" {
		v.Explanation = "The webhook says: " + truncate(a.Explanation, 200)
	}
	return v, nil
}

// transportError says why a call failed without the URL, which may hold
// a credential.
func transportError(ctx context.Context, err error) *Error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return &Error{Message: "timed out"}
	}
	if ctx.Err() != nil {
		return &Error{Message: "canceled"}
	}
	return &Error{Message: "unreachable"}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
