package httpapi

import (
	"context"
	"errors"
	"testing"
)

type body struct {
	Name  *string  `json:"name"`
	Value *float64 `json:"value"`
	Tags  []string `json:"tags"`
}

func TestDecodeStrict(t *testing.T) {
	for _, c := range []struct {
		in, param, msg string
		trailing       bool
	}{
		{`{"name":"a","value":1}`, "", "", false},
		{`{"nmae":"a"}`, "nmae", `unknown field "nmae"`, false},
		{`{"value":"x"}`, "value", "value must be a JSON float64", false},
		{`{"tags":"x"}`, "tags", "tags must be a JSON slice", false},
		{`[1]`, "", "the body must be a JSON object", false},
		{`{"name":`, "", "the body is not valid JSON", false},
		{`{} {}`, "", "the body must be a single JSON object", true},
	} {
		var b body
		err := DecodeStrict([]byte(c.in), &b)
		if c.msg == "" {
			if err != nil {
				t.Errorf("%s: %v", c.in, err)
			}
			continue
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Param != c.param || fe.Message != c.msg || errors.Is(err, ErrTrailing) != c.trailing {
			t.Errorf("%s: %#v; want param %q, message %q", c.in, err, c.param, c.msg)
		}
	}
}

func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{`{"name":"a"}`, `{"x":1}`, `{} {}`, `{"value":true}`, `null`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var b body
		err := DecodeStrict(data, &b)
		if err == nil {
			return
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Message == "" {
			t.Fatalf("%q: %v is not a FieldError with a message", data, err)
		}
		if fe.Param != "" && fe.Param != "name" && fe.Param != "value" && fe.Param != "tags" && fe.Message != "unknown field "+quoteShort(fe.Param) {
			t.Fatalf("%q: names %q, not a field of the body", data, fe.Param)
		}
	})
}

func TestSwap(t *testing.T) {
	n := 0
	err := Swap(context.Background(), 3, func() (bool, error) { n++; return n == 2, nil })
	if err != nil || n != 2 {
		t.Fatalf("swapped on the second: err %v after %d", err, n)
	}
	n = 0
	if err := Swap(context.Background(), 3, func() (bool, error) { n++; return false, nil }); !errors.Is(err, ErrKeptChanging) || n != 3 {
		t.Fatalf("never swapped: err %v after %d", err, n)
	}
	boom := errors.New("boom")
	if err := Swap(context.Background(), 3, func() (bool, error) { return false, boom }); err != boom {
		t.Fatalf("failing attempt: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n = 0
	if err := Swap(ctx, 3, func() (bool, error) { n++; return false, nil }); !errors.Is(err, context.Canceled) || n != 1 {
		t.Fatalf("cancelled: err %v after %d", err, n)
	}
}
