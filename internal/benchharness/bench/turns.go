package bench

import (
	"bytes"
	"fmt"
	"math/rand/v2"
)

// The scanner remembers texts it found clean, so that a conversation's history, which
// an agent resends on every turn, is not scanned again. The upload case must scan every
// byte, so each of its requests differs from all before in every message; the turn case
// measures what the cache is for: a history sent before and one new message.

// tagAlphabet spells the request's number in tags: letters in no keyword of the rules,
// so that a tag wakes no rule and every request costs the scanner the same.
const tagAlphabet = "bdfhjmqvwz"

const tagLen = 8

// tag writes n (modulo 10^8) in tagLen letters of tagAlphabet into b.
func tag(b []byte, n uint64) {
	for i := tagLen - 1; i >= 0; i-- {
		b[i] = tagAlphabet[n%uint64(len(tagAlphabet))]
		n /= uint64(len(tagAlphabet))
	}
}

// variedBody is a chat body whose every message starts with a tag that the n-th request
// sets to n: each request's texts differ from every earlier request's.
type variedBody struct {
	buf  []byte
	tags []int // offsets of the tags
}

func newVariedBody(body []byte) *variedBody {
	v := &variedBody{buf: bytes.Clone(body)}
	key := []byte(`"content":"`)
	for off := 0; ; {
		i := bytes.Index(v.buf[off:], key)
		if i < 0 {
			break
		}
		at := off + i + len(key)
		// Every message is longer than a tag, and its first bytes are prose.
		v.tags = append(v.tags, at)
		off = at
	}
	return v
}

// next returns the body with the tags set to n; the slice is reused by the next call.
func (v *variedBody) next(n uint64) []byte {
	for _, at := range v.tags {
		tag(v.buf[at:at+tagLen], n)
	}
	return v.buf
}

// turnBody is a conversation of history (a ChatBody) and one new user message of
// turnMessage bytes, whose tag the n-th request sets to n.
type turnBody struct {
	buf []byte
	at  int // the new message's tag
}

// turnMessage is the new message's text length: a few paragraphs, as an agent's next
// turn (a tool result, a question) adds.
const turnMessage = 2048

// turnExtra is what the new message adds to the history.
const turnExtra = len(`,{"role":"user","content":""}`) + turnMessage

// TurnSize is the length of the turn case's body.
const TurnSize = BodySize + turnExtra

func newTurnBody(history []byte) *turnBody {
	r := rand.New(rand.NewPCG(3, 4))
	msg := make([]byte, 0, turnMessage)
	msg = append(msg, bytes.Repeat([]byte{tagAlphabet[0]}, tagLen)...)
	msg = append(msg, ' ')
	msg = append(msg, prose(r, turnMessage)...)
	msg = msg[:turnMessage]
	head := history[:len(history)-len(chatTail)]
	t := &turnBody{}
	t.buf = append(t.buf, head...)
	t.buf = append(t.buf, `,{"role":"user","content":"`...)
	t.at = len(t.buf)
	t.buf = append(t.buf, msg...)
	t.buf = append(t.buf, `"}`...)
	t.buf = append(t.buf, chatTail...)
	if len(t.buf) != len(history)+turnExtra {
		panic(fmt.Sprintf("bench: turn body of %d bytes, want %d", len(t.buf), len(history)+turnExtra))
	}
	return t
}

// next returns the body with the new message's tag set to n; the slice is reused.
func (t *turnBody) next(n uint64) []byte {
	tag(t.buf[t.at:t.at+tagLen], n)
	return t.buf
}
