module example.test/acme/tool

go 1.22

require (
	example.test/acme/lib v1.4.0
	example.test/acme/util v0.7.0
)
