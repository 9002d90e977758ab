package bedrock

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/chat"
)

// maxAnswer bounds a whole translated answer read into memory, and
// maxErrorBody an error answer.
const (
	maxAnswer    = 64 << 20
	maxErrorBody = 1 << 20
)

var _ gateway.Translator = (*provider)(nil)

// Translate turns an OpenAI chat completion into a Bedrock Converse request
// (POST /model/{modelId}/converse, or /converse-stream when streamed), and
// an OpenAI embeddings request into an InvokeModel request of the Titan or
// Cohere embedding model it names (POST /model/{modelId}/invoke). It is
// safe for concurrent use.
func (p *provider) Translate(route string, _ *gateway.Target, body []byte) (*gateway.Translation, error) {
	switch route {
	case gateway.RouteChatCompletions:
		return translateChat(body)
	case gateway.RouteEmbeddings:
		return translateEmbeddings(body)
	}
	return nil, badRequest(gateway.CodeUnsupportedParameter, "", route+" is not translated for bedrock")
}

// modelPath returns the path of action on model, and its escaped form in
// which the model id is one segment: an ARN's '/' is %2F.
func modelPath(model, action string) (path, rawPath string, err error) {
	if model == "." || model == ".." || len(model) > 2048 {
		return "", "", badRequest(gateway.CodeInvalidJSON, "model", "model: not a bedrock model id or ARN")
	}
	for i := 0; i < len(model); i++ {
		if model[i] <= ' ' || model[i] == 0x7f {
			return "", "", badRequest(gateway.CodeInvalidJSON, "model", "model: not a bedrock model id or ARN")
		}
	}
	return "/model/" + model + "/" + action, "/model/" + url.PathEscape(model) + "/" + action, nil
}

func badRequest(code, param, msg string) *gateway.Error {
	return &gateway.Error{Status: http.StatusBadRequest, Type: gateway.TypeInvalidRequest, Code: code, Param: param, Message: msg}
}

// unsupported is the 400 for a parameter Bedrock cannot honour.
func unsupported(param, msg string) error {
	return badRequest(gateway.CodeUnsupportedParameter, param, param+": "+msg+" (bedrock cannot do it)")
}

// paramError turns a *chat.ParamError into the gateway's 400.
func paramError(err error) error {
	var pe *chat.ParamError
	if errors.As(err, &pe) {
		msg := pe.Message
		if pe.Param != "" {
			msg = pe.Param + ": " + msg
		}
		return badRequest(gateway.CodeInvalidJSON, pe.Param, msg)
	}
	return err
}

// badAnswer is the error for an answer from Bedrock that cannot be
// translated: the caller gets a 502, as when no provider answered.
func badAnswer(what string) error {
	return errors.Join(gateway.ErrUpstreamUnreachable, errors.New("gateway: bedrock answered with "+what))
}

// answerID returns the id of a translated answer: Bedrock's request id,
// which its answers carry in a header rather than the body, else a random
// one.
func answerID(res *http.Response) string {
	if id := res.Header.Get("X-Amzn-Requestid"); id != "" && len(id) <= 128 {
		return "chatcmpl-" + id
	}
	var b [12]byte
	rand.Read(b[:])
	return "chatcmpl-" + hex.EncodeToString(b[:])
}

// setBody gives res a translated body: body itself when not nil (its
// length known), else the stream already in res.Body.
func setBody(res *http.Response, contentType string, body []byte) {
	h := res.Header
	h.Set("Content-Type", contentType)
	h.Del("Content-Encoding")
	if body == nil {
		h.Del("Content-Length")
		res.ContentLength = -1
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	res.ContentLength = int64(len(body))
	res.Body = io.NopCloser(bytes.NewReader(body))
}

// readAnswer reads and closes the body of an answer, up to max bytes.
func readAnswer(res *http.Response, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(res.Body, max))
	res.Body.Close()
	return b, err
}

// bedrockError turns a Bedrock error answer ({"message": …}, its kind in
// the X-Amzn-Errortype header) into an OpenAI-shaped one with the same
// status: the kind (ValidationException, ThrottlingException, …) is the
// code, and the type follows the status.
func bedrockError(res *http.Response) error {
	b, err := readAnswer(res, maxErrorBody)
	if err != nil {
		return err
	}
	var e struct {
		Message  string `json:"message"`
		Message2 string `json:"Message"`
		Type     string `json:"__type"`
	}
	json.Unmarshal(b, &e)
	msg := e.Message
	if msg == "" {
		msg = e.Message2
	}
	if msg == "" {
		msg = "bedrock answered " + strconv.Itoa(res.StatusCode) + " " + http.StatusText(res.StatusCode)
	}
	kind := res.Header.Get("X-Amzn-Errortype")
	if kind == "" {
		kind = e.Type
	}
	setBody(res, "application/json", chat.ErrorBody(msg, errorType(res.StatusCode), errorKind(kind), ""))
	return nil
}

// errorKind returns the exception name of an error type as AWS writes it,
// without the namespace before '#' or the URL after ':'
// ("ValidationException:http://internal.amazon.com/…").
func errorKind(s string) string {
	if i := strings.LastIndexByte(s, '#'); i >= 0 {
		s = s[i+1:]
	}
	s, _, _ = strings.Cut(s, ":")
	if len(s) > 128 {
		return ""
	}
	return s
}

// errorType is the OpenAI error type for an answer's status.
func errorType(status int) string {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return gateway.TypePermission
	case status == http.StatusNotFound:
		return gateway.TypeNotFound
	case status == http.StatusRequestTimeout:
		return gateway.TypeTimeout
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == http.StatusFailedDependency:
		return gateway.TypeGateway // the model failed, not the request
	case status >= 400 && status < 500:
		return gateway.TypeInvalidRequest
	}
	return gateway.TypeGateway
}
