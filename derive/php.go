package derive

import (
	"encoding/json"
	"maps"
	"slices"
)

// phpManifests: composer.json and its lock.
var phpManifests = []manifest{
	{named("composer.json"), parseComposer},
	{named("composer.lock"), selects("packagist")},
}

func parseComposer(d *deriver, file string, data []byte) {
	d.selectPreset("packagist", file)
	var cj struct {
		Repositories json.RawMessage `json:"repositories"`
	}
	if json.Unmarshal(data, &cj) != nil || len(cj.Repositories) == 0 {
		return
	}
	type repo struct {
		Type string `json:"type"`
		URL  string `json:"url"`
	}
	var list []repo
	if json.Unmarshal(cj.Repositories, &list) != nil {
		var named map[string]repo // the object form: {"name": {...}}
		if json.Unmarshal(cj.Repositories, &named) != nil {
			return
		}
		for _, k := range slices.Sorted(maps.Keys(named)) {
			list = append(list, named[k])
		}
	}
	for _, r := range list {
		if r.URL == "" {
			continue
		}
		why := "composer repository (" + r.Type + ")"
		if r.Type == "vcs" || r.Type == "git" {
			d.suggestGit(file, lineOfString(data, r.URL), r.URL, why)
		} else {
			d.suggest(file, lineOfString(data, r.URL), r.URL, why)
		}
	}
}
