package gateway

import (
	"encoding/binary"

	"github.com/sluice-egress/sluice/phantom"
)

// wsScrub re-frames what an upstream sends on a WebSocket whose upgrade
// carried a real secret, or went to a host one is bound to: each message is
// assembled whole (up to the message limit), scrubbed, and sent on as one
// frame, so that a secret split across fragments is found too; a control
// frame is scrubbed alone. A frame it cannot read (masked, RSV bits set,
// unknown opcode) or a message over the limit ends the WebSocket: nothing
// unscrubbed reaches the client.
type wsScrub struct {
	sc  *phantom.Scrubber
	max int64
	in  []byte // received, not yet a whole frame
	op  byte   // opcode of the message being assembled; 0: none
	msg []byte // its payload so far
}

// writeScrubbedLocked is wsConn.Write for a scrubbed WebSocket. The frames
// it writes are whole, so a Close of the gateway's own may go at any time.
func (c *wsConn) writeScrubbedLocked(p []byte) (int, error) {
	out, code, why := c.scrub.feed(p)
	if len(out) > 0 {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
	}
	if code != 0 {
		c.s.g.logger().Info("websocket closed: upstream frames cannot be scrubbed", logTenant, c.s.id.Tenant,
			logHost, c.s.host, logReason, why)
		c.Conn.Write(wsCloseFrame(code, why, false))
		c.closed = true
		return 0, errWebSocketClosed
	}
	return len(p), nil
}

// feed takes bytes from the upstream and returns the frames to send to the
// client; code is non-zero (with a reason) when the WebSocket must end.
func (d *wsScrub) feed(p []byte) (out []byte, code int, why string) {
	d.in = append(d.in, p...)
	for {
		if len(d.in) < 2 {
			return out, 0, ""
		}
		need := 2
		switch d.in[1] & 0x7f {
		case 126:
			need += 2
		case 127:
			need += 8
		}
		if d.in[1]&0x80 != 0 {
			return out, wsCloseProtocolError, "upstream frame masked"
		}
		if len(d.in) < need {
			return out, 0, ""
		}
		n, _ := wsLengthAndKey(d.in[:need])
		fin, rsv, op := d.in[0]&0x80 != 0, d.in[0]&0x70, d.in[0]&0x0f
		control := op&0x8 != 0
		switch {
		case rsv != 0:
			return out, wsCloseProtocolError, "reserved bits set"
		case control && (op > wsOpPong || !fin || n > wsMaxControlPayload):
			return out, wsCloseProtocolError, "bad control frame"
		case !control && op > wsOpBinary:
			return out, wsCloseProtocolError, "unknown opcode"
		case op == wsOpContinuation && d.op == 0, (op == wsOpText || op == wsOpBinary) && d.op != 0:
			return out, wsCloseProtocolError, "bad fragmentation"
		case !control && (n > uint64(d.max) || int64(len(d.msg))+int64(n) > d.max):
			return out, wsCloseTooBig, "upstream message over the scrub limit"
		}
		if uint64(len(d.in)-need) < n {
			return out, 0, ""
		}
		payload := d.in[need : need+int(n)]
		if control {
			out = appendScrubbedControl(out, op, payload, d.sc)
		} else {
			if d.op == 0 {
				d.op = op
			}
			d.msg = append(d.msg, payload...)
			if fin {
				out = wsAppendFrame(out, d.op, d.sc.Bytes(d.msg))
				d.op, d.msg = 0, nil
			}
		}
		d.in = append(d.in[:0], d.in[need+int(n):]...)
	}
}

// appendScrubbedControl appends control frame op with payload scrubbed (a
// Close keeps its status code), cut to what a control frame may carry.
func appendScrubbedControl(out []byte, op byte, payload []byte, sc *phantom.Scrubber) []byte {
	var p []byte
	if op == wsOpClose && len(payload) >= 2 {
		p = append(append(p, payload[:2]...), sc.Bytes(payload[2:])...)
	} else {
		p = append(p, sc.Bytes(payload)...)
	}
	if len(p) > wsMaxControlPayload {
		p = p[:wsMaxControlPayload]
	}
	return wsAppendFrame(out, op, p)
}

// wsAppendFrame appends one unmasked, final frame (server to client).
func wsAppendFrame(dst []byte, op byte, payload []byte) []byte {
	dst = append(dst, 0x80|op)
	switch n := len(payload); {
	case n < 126:
		dst = append(dst, byte(n))
	case n < 1<<16:
		dst = binary.BigEndian.AppendUint16(append(dst, 126), uint16(n))
	default:
		dst = binary.BigEndian.AppendUint64(append(dst, 127), uint64(n))
	}
	return append(dst, payload...)
}
