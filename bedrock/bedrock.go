// Package bedrock is the AWS Bedrock provider kind (the spec's hostC) of
// github.com/modelgateway/gateway. It lives in a module of its own so that
// the gateway core does not depend on the AWS SDK.
//
// The gateway core keeps no global registry of provider kinds: a provider
// is registered on the Gateway that uses it, under the slug callers name in
// x-gateway-provider, virtual keys and configs:
//
//	g := gateway.New(gateway.Options{
//		Keys:      store,
//		Providers: map[string]gateway.Provider{gateway.ProviderBedrock: bedrock.New(bedrock.Options{})},
//	})
//
// Requests go to https://bedrock-runtime.{region}.amazonaws.com plus the
// provider path (e.g. /model/{modelId}/invoke, /model/{modelId}/converse,
// /model/{modelId}/invoke-with-response-stream), or to the target's base
// URL when a virtual key or config gives one (a VPC endpoint, a FIPS
// endpoint). They are signed with AWS Signature Version 4 for the service
// "bedrock", over the SHA-256 of the body, by the AWS SDK's own signer.
//
// # Settings
//
// The credentials and region come from the target's gateway.HostSettings:
// the x-gateway-hostc-access-key-id, x-gateway-hostc-secret-access-key,
// x-gateway-hostc-session-token and x-gateway-hostc-region headers, or the
// access_key_id, secret_access_key, session_token and region fields of a
// virtual key or config target. A session token, when given, is sent as
// X-Amz-Security-Token and signed. Without an access key pair, a Bedrock
// API key sent as the provider token (Authorization: Bearer …, or a virtual
// key's api_key) is passed on as a bearer token instead of signing.
// Missing or malformed settings are answered with a 400 invalid_header
// naming the header; the region must be a region name such as us-east-1,
// so that it cannot move the request to another host.
//
// # Security
//
// The secret access key is used only to compute the signature; it is never
// sent, and neither it nor the session token ever appears in an error
// message (errors name headers, never values). The gateway's request logs
// hold no headers.
//
// # Bodies and streaming
//
// Signing needs the hash of the whole body, so the request body is read
// into memory first, up to Options.MaxBodyBytes (413 above it). Outside
// the translated routes below, responses are not touched: streamed
// answers (Content-Type application/vnd.amazon.eventstream) reach the
// caller byte for byte, as they arrive.
//
// # OpenAI format
//
// The provider is a gateway.Translator. POST /chat/completions becomes a
// Converse request to /model/{modelId}/converse, or ConverseStream's
// /model/{modelId}/converse-stream when streamed, with the OpenAI model
// as the model id (an ARN's '/' sent as %2F, so it stays one segment),
// and the answer becomes OpenAI's: one chat.completion, or
// chat.completion.chunk events ending with data: [DONE], decoded from
// Bedrock's binary event stream as it arrives. The mapping:
//
//   - system and developer messages are Converse's system prompts; tool
//     messages are toolResult blocks of a user turn; consecutive turns of
//     one role are merged, as Converse wants the roles to alternate.
//   - Images must be base64 data: URLs (png, jpeg, gif, webp): Converse
//     takes the bytes, not a URL, and https URLs are refused. S3 URLs are
//     refused too, so that a caller cannot have the target's credentials
//     read objects for it.
//   - max_completion_tokens (or max_tokens), temperature (0 to 1), top_p
//     and stop are inferenceConfig; tools are toolSpecs; tool_choice auto,
//     required and a function are Converse's auto, any and tool. Converse
//     has no "none": the tools are then not sent, which Converse allows
//     only when the conversation holds no tool calls (else 400).
//   - n > 1, response_format json_object and json_schema,
//     parallel_tool_calls false, logprobs, seed, penalties, logit_bias,
//     audio and the like are refused with a 400 naming the parameter.
//     Such a parameter set to what asks for nothing (false, 0, {}) passes.
//     user is dropped, since Converse's requestMetadata would refuse many
//     ids, and so are members that change nothing in the answer
//     (metadata, store, service_tier).
//   - stopReason end_turn and stop_sequence are finish_reason stop,
//     max_tokens length, tool_use tool_calls, guardrail_intervened and
//     content_filtered content_filter. Usage counts the cached tokens, and
//     a streamed answer's usage chunk (stream_options.include_usage) comes
//     from the metadata event Bedrock sends after messageStop.
//
// POST /embeddings becomes an InvokeModel call of a Titan
// (amazon.titan-embed-*, one input per call: more is refused) or Cohere
// (cohere.embed-*, up to 96 inputs, input_type search_document unless the
// request's input_type says otherwise) model; other models are refused
// with a 400 naming model. Bedrock's errors ({"message": …} and the
// X-Amzn-Errortype header) come back OpenAI-shaped with Bedrock's status,
// the error type as code. An exception in the middle of a stream is an
// OpenAI error event ending the stream without [DONE]; a stream that is
// cut, or fails a CRC check, aborts the caller's connection.
//
// # Anthropic Messages
//
// The provider is a gateway.NativeTranslator. POST /v1/messages for a
// Claude model goes to InvokeModel (or InvokeModelWithResponseStream)
// with the Messages body itself, and /v1/messages/count_tokens to
// CountTokens (POST /model/{modelId}/count-tokens) with that body, base64,
// as its invokeModel input, the answer given back as Anthropic's
// {"input_tokens": n}. Other models are translated through Converse, and
// their count_tokens is the gateway's estimate.
package bedrock

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/modelgateway/gateway"
)

// SigningName is the service name Bedrock requests are signed for.
const SigningName = "bedrock"

// DefaultMaxBodyBytes is the request body limit when Options.MaxBodyBytes
// is zero.
const DefaultMaxBodyBytes = 32 << 20

// Options configure the Bedrock provider. The zero value is ready to use.
type Options struct {
	// MaxBodyBytes caps the request body read into memory to be hashed for
	// the signature; a larger body is refused with 413. Zero means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64

	// Now returns the signing time. Nil means time.Now; tests set a fixed
	// clock to get reproducible signatures.
	Now func() time.Time
}

// New returns the Bedrock provider, to be registered in
// gateway.Options.Providers under gateway.ProviderBedrock ("bedrock"). It
// is safe for concurrent use.
func New(opts Options) gateway.Provider {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &provider{opts: opts, signer: v4.NewSigner()}
}

type provider struct {
	opts   Options
	signer *v4.Signer
}

var _ gateway.Provider = (*provider)(nil)

// bedrockHeaders are Bedrock's own request headers, which pass through
// (and are signed) when the caller sends them.
var bedrockHeaders = []string{
	"X-Amzn-Bedrock-Accept",
	"X-Amzn-Bedrock-Trace",
	"X-Amzn-Bedrock-Guardrailidentifier",
	"X-Amzn-Bedrock-Guardrailversion",
	"X-Amzn-Bedrock-Performanceconfig-Latency",
}

// Rewrite points the request at Bedrock and signs it.
func (p *provider) Rewrite(pr *gateway.ProxyRequest) error {
	h := &pr.Target.Host
	switch {
	case h.Region == "":
		return missing(gateway.HeaderHostCRegion, "region")
	case !awsRegion(h.Region):
		return invalid(gateway.HeaderHostCRegion, "must be an AWS region name such as us-east-1")
	case h.SessionToken != "" && !visibleASCII(h.SessionToken):
		return invalid(gateway.HeaderHostCSessionToken, "must be visible ASCII")
	}
	bearer := h.AccessKeyID == "" && h.SecretAccessKey == "" && pr.Target.APIKey != ""
	if !bearer {
		switch {
		case h.AccessKeyID == "":
			return missing(gateway.HeaderHostCAccessKeyID, "access_key_id")
		case !accessKeyID(h.AccessKeyID):
			return invalid(gateway.HeaderHostCAccessKeyID, "must be 1 to 128 letters and digits")
		case h.SecretAccessKey == "":
			return missing(gateway.HeaderHostCSecretKey, "secret_access_key")
		}
	}

	base := pr.Target.BaseURL
	if base == nil {
		base = &url.URL{Scheme: "https", Host: "bedrock-runtime." + h.Region + ".amazonaws.com"}
	}
	pr.SetURL(base)
	pr.CopyHeaders(bedrockHeaders...)
	out := pr.Out
	for _, k := range []string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token", "X-Amz-Content-Sha256"} {
		out.Header.Del(k)
	}
	if bearer {
		out.Header.Set("Authorization", "Bearer "+pr.Target.APIKey)
		return nil
	}

	body, err := p.readBody(out)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: h.AccessKeyID, SecretAccessKey: h.SecretAccessKey, SessionToken: h.SessionToken}
	if err := p.signer.SignHTTP(out.Context(), creds, out, hex.EncodeToString(sum[:]), SigningName, h.Region, p.opts.Now()); err != nil {
		// The signer's errors carry no credentials; the cause is kept
		// for the error log only.
		return &gateway.Error{Status: http.StatusInternalServerError, Type: gateway.TypeGateway, Code: gateway.CodeInternal,
			Message: "the request to bedrock could not be signed", Err: err}
	}
	return nil
}

// readBody reads the outbound body into memory, up to the limit, and
// replaces it with a replayable copy of a known length.
func (p *provider) readBody(out *http.Request) ([]byte, error) {
	var body []byte
	if out.Body != nil && out.Body != http.NoBody {
		b, err := io.ReadAll(io.LimitReader(out.Body, p.opts.MaxBodyBytes+1))
		if err != nil {
			return nil, fmt.Errorf("gateway: bedrock: reading the request body: %w", err)
		}
		if int64(len(b)) > p.opts.MaxBodyBytes {
			return nil, &gateway.Error{Status: http.StatusRequestEntityTooLarge, Type: gateway.TypeInvalidRequest,
				Code:    gateway.CodePayloadTooLarge,
				Message: "request body exceeds " + strconv.FormatInt(p.opts.MaxBodyBytes, 10) + " bytes, the most the bedrock provider signs"}
		}
		body = b
	}
	out.ContentLength = int64(len(body))
	if len(body) == 0 {
		out.Body = http.NoBody
		out.GetBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
		return body, nil
	}
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return body, nil
}

func missing(header, field string) *gateway.Error {
	return &gateway.Error{Status: http.StatusBadRequest, Type: gateway.TypeInvalidRequest, Code: gateway.CodeInvalidHeader,
		Param: header, Message: "bedrock needs " + header + " (or " + field + " on the virtual key or config target)"}
}

func invalid(header, msg string) *gateway.Error {
	return &gateway.Error{Status: http.StatusBadRequest, Type: gateway.TypeInvalidRequest, Code: gateway.CodeInvalidHeader,
		Param: header, Message: header + ": " + msg}
}

// awsRegion reports whether s looks like an AWS region name: lower-case
// letters, digits and hyphens, starting with a letter and ending with a
// digit, at most 32 characters (us-east-1, us-gov-west-1, ap-southeast-5).
func awsRegion(s string) bool {
	if len(s) < 3 || len(s) > 32 || s[0] < 'a' || s[0] > 'z' || s[len(s)-1] < '0' || s[len(s)-1] > '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') || c == '-' && s[i-1] == '-' {
			return false
		}
	}
	return true
}

// accessKeyID reports whether s can be an access key id: it is written
// into the Authorization header, so only letters and digits are allowed.
func accessKeyID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
