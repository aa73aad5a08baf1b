package derive

// goManifests: a Go module or workspace selects the Go preset; its files name no hosts
// (GOPROXY is read from Makefiles and Dockerfiles).
var goManifests = []manifest{
	{named("go.mod", "go.work"), selects("go")},
}
