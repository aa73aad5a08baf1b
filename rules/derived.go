package rules

// Derived is what a run's repository selected, in the form the policy takes it: presets
// by name, the git remote's repository and suggestions. Package derive computes it from
// manifests and the remote; rules only reads it. Suggestions never become entries: a
// repository may name any host, so only presets that the class's derive.presets permits
// are expanded.
type Derived struct {
	// Presets selected, sorted by name, each with the files that selected it.
	Presets []DerivedPreset `json:"presets"`
	// Repo is the git remote's repository on a known git host; nil when none.
	Repo *GitRepo `json:"repo,omitempty"`
	// Suggestions are hosts the repository names, sorted by host, port and source.
	Suggestions []Suggestion `json:"suggestions"`
}

// DerivedPreset is one preset a repository selected.
type DerivedPreset struct {
	Name string `json:"name"`
	// From lists the manifests (paths relative to the repository) or "git remote".
	From []string `json:"from"`
}

// GitRepo is a repository on a known git host, from a run's remote URL.
type GitRepo struct {
	// Host is the git host ("github.com").
	Host string `json:"host"`
	// Path is the repository path without ".git" ("owner/repo", "group/sub/project").
	Path string `json:"path"`
	// Preset is the git host's preset ("github").
	Preset string `json:"preset"`
}

// Suggestion is a host a repository names that its policy may lack: a value a caller can
// turn into an access request. It never carries credentials or a query.
type Suggestion struct {
	Host string `json:"host"`
	Port int    `json:"port"`
	// URL is the address as written, without user info, query or fragment, shortened.
	URL string `json:"url"`
	// Source is "file:line" (or "git remote").
	Source string `json:"source"`
	// Why says what named it ("--extra-index-url", ".npmrc registry", "git dependency").
	Why string `json:"why"`
}
