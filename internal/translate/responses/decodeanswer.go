package responses

import "github.com/modelgateway/gateway/internal/wire"

// The JSON names of a chat completion answer's fields, in the order
// decodeCompletion numbers them; a choice's message and the usage are
// read as a stream chunk's delta and usage are (decode.go).
var (
	completionFields   = []string{"id", "created", "model", "choices", "usage"}
	answerChoiceFields = []string{"message", "finish_reason"}
)

// decodeCompletion reads a chat completion answer for wire.Decode, as
// json.Unmarshal reads it into a completion.
func decodeCompletion(d *wire.Decoder, c *completion) {
	d.Members(completionFields, func(n int) {
		if d.Null() {
			return
		}
		switch n {
		case 0:
			c.ID = d.String()
		case 1:
			c.Created = int64(d.Int())
		case 2:
			c.Model = d.String()
		case 3:
			c.Choices = []completionChoice{}
			for d.Array(); d.Elem(); {
				c.Choices = append(c.Choices, completionChoice{})
				decodeAnswerChoice(d, &c.Choices[len(c.Choices)-1])
			}
		case 4:
			c.Usage = &chatUsage{}
			decodeUsage(d, c.Usage)
		}
	})
}

func decodeAnswerChoice(d *wire.Decoder, ch *completionChoice) {
	d.Members(answerChoiceFields, func(n int) {
		if d.Null() {
			return
		}
		switch n {
		case 0:
			decodeReply(d, &ch.Message)
		case 1:
			ch.FinishReason = d.String()
		}
	})
}
