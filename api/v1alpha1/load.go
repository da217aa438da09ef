package v1alpha1

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Kinds of fleet objects.
const (
	KindSource       = "Source"
	KindRelease      = "Release"
	KindNotification = "Notification"
	KindWindow       = "Window"
)

// isKind reports whether kind is a fleet object kind.
func isKind(kind string) bool {
	return kind == KindSource || kind == KindRelease || kind == KindNotification || kind == KindProject || kind == KindWindow
}

// kindList names the fleet object kinds for messages.
const kindList = KindSource + ", " + KindRelease + ", " + KindNotification + ", " + KindProject + " or " + KindWindow

// DirRevision identifies the content of a fleet directory, so that an unchanged directory is
// not parsed again: a hash of every file that walkFleet visits (LoadDir reads some of them),
// with its path.
func DirRevision(dir string) (string, error) {
	h := sha256.New()
	err := walkFleet(dir, func(p string) error {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(data))
		h.Write(data)
		return nil
	})
	if err != nil {
		return "", err
	}
	return "dir:" + hex.EncodeToString(h.Sum(nil))[:16], nil
}

// walkFleet calls fn for every file below dir in lexical order, except hidden files and
// directories. Symbolic links to directories are not followed.
func walkFleet(dir string, fn func(path string) error) error {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		return fn(p)
	})
	if err != nil {
		return fmt.Errorf("fleet directory %s: %w", dir, err)
	}
	return nil
}

// LoadDir reads the fleet configuration in dir: every *.yaml, *.yml and *.json file below it,
// recursively, except hidden files and directories. Files are named in problems by their path
// as found under dir ("fleet/releases.yaml" for dir "fleet"). Symbolic links to directories are
// not followed, so a fleet repository cannot pull in files from outside itself that way.
func LoadDir(dir string) (*Fleet, error) {
	files, err := readFleetFiles(dir)
	if err != nil {
		return nil, err
	}
	return Parse(files)
}

func isConfigFile(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// Parse decodes and validates a fleet configuration held in memory, keyed by file name. Every
// file is parsed whatever its name (JSON is YAML). Objects are returned in file-name order, then
// document order, so the same files always give the same Fleet. The error, if any, is an
// [*InvalidError] with every problem found.
func Parse(files map[string][]byte) (*Fleet, error) {
	return parseFleet(files, nil)
}

func parseFleet(files map[string][]byte, t *Tenant) (*Fleet, error) {
	l := loader{origins: origins{broken: make(map[string]bool), brokenProjects: make(map[string]bool)}}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		l.parseFile(name, files[name])
	}
	problems := slices.Concat(l.problems, validate(&l.fleet, &l.origins, t))
	if len(problems) > 0 {
		// Decoding and validation are two passes; group what they found by file.
		slices.SortStableFunc(problems, func(a, b Problem) int { return strings.Compare(a.File, b.File) })
		return nil, &InvalidError{Problems: problems}
	}
	return &l.fleet, nil
}

type loader struct {
	fleet    Fleet
	origins  origins
	problems []Problem
}

func (l *loader) parseFile(file string, data []byte) {
	for _, doc := range splitDocuments(data) {
		l.parseDocument(file, doc)
	}
}

func (l *loader) parseDocument(file string, doc document) {
	docName := fmt.Sprintf("document %d", doc.index)
	fail := func(object, field, msg string) {
		l.problems = append(l.problems, Problem{File: file, Line: doc.line, Object: object, Field: field, Message: msg})
	}

	// Strict here means duplicate keys are an error; unknown fields are found below.
	j, err := yaml.YAMLToJSONStrict(doc.data)
	if err != nil {
		fail(docName, "", flatten(err.Error()))
		return
	}
	var generic any
	if err := json.Unmarshal(j, &generic); err != nil {
		fail(docName, "", err.Error())
		return
	}
	if generic == nil {
		return // "~", "null": as empty as a document of comments
	}
	obj, ok := generic.(map[string]any)
	if !ok {
		fail(docName, "", "must be an object with apiVersion and kind, not "+jsonKind(generic))
		return
	}

	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	object := docName
	if name != "" && isKind(kind) {
		object = kind + "/" + name
	}
	// A Source that fails to decode is still a Source the user meant to define: releases that
	// use it should not get a second, misleading "not defined" problem.
	markBroken := func() {
		if kind == KindSource && name != "" {
			l.origins.broken[name] = true
		}
		if kind == KindProject && name != "" {
			l.origins.brokenProjects[name] = true
		}
	}

	var target any
	switch {
	case apiVersion != APIVersion && isKind(kind):
		fail(object, "apiVersion", fmt.Sprintf("%s is not supported: want %s", describe(apiVersion), APIVersion))
		markBroken()
		return
	case apiVersion != APIVersion:
		fail(docName, "", fmt.Sprintf("%s, %s is not a fleet object: want apiVersion %s with kind %s",
			describe(apiVersion), describeKind(kind), APIVersion, kindList))
		return
	case kind == KindSource:
		target = &Source{}
	case kind == KindRelease:
		target = &Release{}
	case kind == KindNotification:
		target = &Notification{}
	case kind == KindProject:
		target = &Project{}
	case kind == KindWindow:
		target = &Window{}
	default:
		fail(docName, "kind", fmt.Sprintf("%s is not a fleet object kind: want %s", describeKind(kind), kindList))
		return
	}

	if fps := checkSchema("", obj, reflect.TypeOf(target).Elem()); len(fps) > 0 {
		for _, fp := range fps {
			fail(object, fp.field, fp.message)
		}
		markBroken()
		return
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(target); err != nil {
		// checkSchema should have caught anything encoding/json refuses; this is the backstop.
		fail(object, "", err.Error())
		markBroken()
		return
	}

	o := origin{file: file, doc: doc.index, line: doc.line}
	switch t := target.(type) {
	case *Source:
		l.fleet.Sources = append(l.fleet.Sources, *t)
		l.origins.sources = append(l.origins.sources, o)
	case *Release:
		l.fleet.Releases = append(l.fleet.Releases, *t)
		l.origins.releases = append(l.origins.releases, o)
	case *Notification:
		l.fleet.Notifications = append(l.fleet.Notifications, *t)
		l.origins.notifications = append(l.origins.notifications, o)
	case *Project:
		l.fleet.Projects = append(l.fleet.Projects, *t)
		l.origins.projects = append(l.origins.projects, o)
	case *Window:
		l.fleet.Windows = append(l.fleet.Windows, *t)
		l.origins.windows = append(l.origins.windows, o)
	}
}

func describe(apiVersion string) string {
	if apiVersion == "" {
		return "apiVersion not set"
	}
	return fmt.Sprintf("apiVersion %q", apiVersion)
}

func describeKind(kind string) string {
	if kind == "" {
		return "kind not set"
	}
	return fmt.Sprintf("kind %q", kind)
}

// flatten puts a multi-line YAML error ("yaml: unmarshal errors:\n  line 4: ...") on one line,
// since each problem is one line of the InvalidError.
func flatten(s string) string {
	s = strings.ReplaceAll(s, ":\n  ", ": ")
	return strings.ReplaceAll(s, "\n  ", "; ")
}

// document is one YAML document of a file.
type document struct {
	// index counts the documents of the file that have content, from 1, so that "document 2"
	// is the second one a reader sees even when the file starts with "---".
	index int
	// line is the file's line where the document's content starts (after blank lines and
	// comments).
	line int
	// data is the document preceded by as many newlines as there are lines before it in the
	// file, so that the YAML parser's "line N" is the file's line N.
	data []byte
}

// firstContentLine is the line of chunk, which starts at line, where its first line that is
// neither blank nor a comment is.
func firstContentLine(chunk []byte, line int) int {
	for _, l := range bytes.Split(chunk, []byte("\n")) {
		t := bytes.TrimSpace(l)
		if len(t) > 0 && t[0] != '#' {
			return line
		}
		line++
	}
	return line
}

// splitDocuments cuts a file at "---" lines, the way kubectl does: a line that starts with
// "---" followed by nothing or by white space. Text after the marker on the same line belongs
// to the next document. Documents with nothing but blank lines, comments and "..." are left out.
func splitDocuments(data []byte) []document {
	var docs []document
	start, startLine := 0, 1
	add := func(chunk []byte, line int) {
		if isBlank(chunk) {
			return
		}
		d := make([]byte, 0, line-1+len(chunk))
		d = append(d, bytes.Repeat([]byte("\n"), line-1)...)
		docs = append(docs, document{index: len(docs) + 1, line: firstContentLine(chunk, line), data: append(d, chunk...)})
	}
	line := 1
	for off := 0; off < len(data); line++ {
		end := len(data)
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			end = off + i + 1
		}
		if isSeparator(data[off:end]) {
			add(data[start:off], startLine)
			start, startLine = off+3, line
		}
		off = end
	}
	add(data[start:], startLine)
	return docs
}

func isSeparator(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("---")) {
		return false
	}
	return len(line) == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r' || line[3] == '\n'
}

// isBlank reports whether a document has nothing but blank lines, comments and "..." (the
// YAML document end marker, which the parser refuses when no content precedes it).
func isBlank(chunk []byte) bool {
	for l := range bytes.Lines(chunk) {
		l = bytes.TrimSpace(l)
		if len(l) > 0 && l[0] != '#' && !isEndMarker(l) {
			return false
		}
	}
	return true
}

func isEndMarker(l []byte) bool {
	return bytes.HasPrefix(l, []byte("...")) && (len(l) == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '#')
}

// readFleetFiles reads every configuration file under dir, by slash path.
func readFleetFiles(dir string) (map[string][]byte, error) {
	files := make(map[string][]byte)
	err := walkFleet(dir, func(p string) error {
		if !isConfigFile(filepath.Base(p)) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(p)] = data
		return nil
	})
	return files, err
}
