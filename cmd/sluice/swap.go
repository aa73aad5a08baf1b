package main

import (
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/scanner"
)

var (
	_ gateway.Dialer      = (*guard.Holder)(nil)
	_ gateway.Scanner     = (*scanner.Holder)(nil)
	_ gateway.HostScanner = (*scanner.Holder)(nil)
)
