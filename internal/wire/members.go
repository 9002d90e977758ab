package wire

import (
	"encoding/json"

	"github.com/modelgateway/gateway/internal/chat"
)

// The JSON names of chat.ToolCall's fields.
var (
	toolCallFields = []string{"index", "id", "type", "function"}
	functionFields = []string{"name", "arguments"}
)

// Members reads an object whose members the caller decodes: member is
// called with the index in fields of each member named there, to read its
// value. Other members are read by Unknown, and a member named twice
// fails d.
func (d *Decoder) Members(fields []string, member func(n int)) {
	if !d.Object() {
		return
	}
	var seen uint64
	for {
		k, ok := d.Key()
		if !ok {
			return
		}
		n := -1
		for i, f := range fields {
			if f == string(k) {
				n = i
				break
			}
		}
		if n < 0 {
			d.Unknown(k, fields)
			continue
		}
		d.Seen(&seen, n)
		member(n)
	}
}

// NullString reads a string, or null, which is "": encoding/json leaves
// a string it decodes null into as it was.
func (d *Decoder) NullString() string {
	if d.Null() {
		return ""
	}
	return d.String()
}

// NullBool reads true, false or null, which is false.
func (d *Decoder) NullBool() bool {
	if d.Null() {
		return false
	}
	return d.Bool()
}

// StringPtr reads a string, or null, which is nil.
func (d *Decoder) StringPtr() *string {
	if d.Null() {
		return nil
	}
	s := d.String()
	return &s
}

// BoolPtr reads true or false, or null, which is nil.
func (d *Decoder) BoolPtr() *bool {
	if d.Null() {
		return nil
	}
	v := d.Bool()
	return &v
}

// IntPtr reads an integer, or null, which is nil.
func (d *Decoder) IntPtr() *int {
	if d.Null() {
		return nil
	}
	n := d.Int()
	return &n
}

// FloatPtr reads a number, or null, which is nil.
func (d *Decoder) FloatPtr() *float64 {
	if d.Null() {
		return nil
	}
	f := d.Float()
	return &f
}

// ToolCall reads a chat tool call, or null, into tc.
func (d *Decoder) ToolCall(tc *chat.ToolCall) {
	if d.Null() {
		return
	}
	d.Members(toolCallFields, func(n int) {
		switch n {
		case 0:
			tc.Index = d.IntPtr()
		case 1:
			tc.ID = d.NullString()
		case 2:
			tc.Type = d.NullString()
		case 3:
			if d.Null() {
				return
			}
			d.Members(functionFields, func(n int) {
				if n == 0 {
					tc.Function.Name = d.NullString()
				} else {
					tc.Function.Arguments = d.NullString()
				}
			})
		}
	})
}

// Decode decodes data into v with decode, a function reading one value
// from d; when d fails, it zeroes v and decodes data with json.Unmarshal,
// which gives the result or the error.
func Decode[T any](data []byte, v *T, decode func(d *Decoder, v *T)) error {
	var d Decoder
	d.Reset(data)
	decode(&d, v)
	if d.End() {
		return nil
	}
	var zero T
	*v = zero
	return json.Unmarshal(data, v)
}
