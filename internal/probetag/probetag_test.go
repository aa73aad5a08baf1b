package probetag

import "testing"

func TestProof(t *testing.T) {
	n := NewNonce()
	ok, got := Parse(Value(n))
	if !ok || got != n {
		t.Fatalf("Parse(Value) = %v %q", ok, got)
	}
	key := KeyFromToken("tok-0123456789abcdef")
	p := Proof(key, n, "host-not-allowed")
	if !Verify(key, n, "host-not-allowed", p) {
		t.Fatal("a proof does not verify")
	}
	for name, bad := range map[string]bool{
		"another reason": Verify(key, n, "secret-detected", p),
		"another nonce":  Verify(key, NewNonce(), "host-not-allowed", p),
		"another key":    Verify(KeyFromToken("other-0123456789abcdef"), n, "host-not-allowed", p),
		"no nonce":       Verify(key, "", "host-not-allowed", Proof(key, "", "host-not-allowed")),
		"ca key":         Verify(KeyFromCA([]byte("der")), n, "host-not-allowed", p),
	} {
		if bad {
			t.Errorf("%s: verified", name)
		}
	}
	for v, want := range map[string]bool{"doctor": true, "Doctor": false, "doctorx": false, "": false, "doctor nonce=zz": true} {
		if ok, n := Parse(v); ok != want || (v == "doctor nonce=zz" && n != "") {
			t.Errorf("Parse(%q) = %v %q", v, ok, n)
		}
	}
}
