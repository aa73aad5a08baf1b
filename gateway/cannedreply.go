package gateway

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"strconv"
)

// ReasonMalformedRequest: net/http could not parse the request (a bad
// request line, Host or Transfer-Encoding) and refused it before any handler.
const ReasonMalformedRequest = "malformed-request"

// net/http answers a request it cannot read (a head over MaxHeaderBytes, a
// malformed line or header, an unsupported Transfer-Encoding) itself, before
// any handler runs, with a canned reply written in one Write: a status line,
// exactly cannedHeaders, and a short text.
const (
	cannedStart   = "HTTP/1.1 "
	cannedHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
	// cannedMax bounds the writes looked at: the canned replies are short.
	cannedMax = 512
)

// cannedStatus returns the status of net/http's canned reply p ("431 Request
// Header Fields Too Large", "400 Bad Request: malformed Host header"), or nil.
// A response the gateway writes or forwards is never one: net/http puts its
// headers in another order and adds Date.
func cannedStatus(p []byte) []byte {
	if len(p) > cannedMax || !bytes.HasPrefix(p, []byte(cannedStart)) {
		return nil
	}
	i := bytes.IndexByte(p, '\r')
	if i < 0 || !bytes.HasPrefix(p[i:], []byte(cannedHeaders)) {
		return nil
	}
	return p[len(cannedStart):i]
}

// writeReply writes p to c, giving net/http's canned replies the gateway's
// Sluice-Reason and a body that says what to do, as every other refusal has.
func writeReply(c net.Conn, log *slog.Logger, client string, p []byte) (int, error) {
	status := cannedStatus(p)
	if status == nil {
		return c.Write(p)
	}
	reason, hint := ReasonMalformedRequest, "the request could not be read as HTTP/1.1"
	if bytes.HasPrefix(status, []byte("431 ")) {
		reason, hint = ReasonHeaderTooLarge, "the request line and headers are larger than the gateway accepts (limits.max_header_bytes)"
	}
	log.Info("refused", logClient, client, logReason, reason)
	msg := "sluice: " + reason + ": " + hint + " (" + string(status) + ")\n"
	reply := cannedStart + string(status) + "\r\nSluice-Reason: " + reason +
		"\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: " +
		strconv.Itoa(len(msg)) + "\r\n\r\n" + msg
	if _, err := io.WriteString(c, reply); err != nil {
		return 0, err
	}
	return len(p), nil
}

// replyConn is an inspected tunnel's connection as its HTTP/1.1 server
// writes to it: net/http's canned replies get Sluice-Reason (writeReply).
type replyConn struct {
	net.Conn
	log    *slog.Logger
	client string
}

func (c *replyConn) Write(p []byte) (int, error) { return writeReply(c.Conn, c.log, c.client, p) }
