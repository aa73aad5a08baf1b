package rules

// IsManifest reports whether Derive reads the file at p (a slash-separated path
// relative to the repository): for clients that send a repository's manifests to the
// API instead of the whole tree.
func IsManifest(p string) bool { return manifestParser(p) != nil }

// SkipDir reports whether Derive skips a directory of this name (dependencies, build
// output, VCS data).
func SkipDir(name string) bool { return skipDirs[name] }
