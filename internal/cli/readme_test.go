package cli

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/cli/clikit"
)

// TestDocumentedCommandLines checks every flotilla command line the README and the user docs
// show, in code blocks and inline code, against the command tree: the verb exists and every
// flag it uses is one of that verb's flags (as --help lists them).
func TestDocumentedCommandLines(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("../../docs/*.md")
	files = append([]string{"../../README.md"}, files...)
	root := NewRootCommand(io.Discard, io.Discard)
	checked := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, cl := range commandLines(string(data)) {
			checked++
			if problem := checkCommandLine(root, cl.words); problem != "" {
				t.Errorf("%s line %d: %q: %s", filepath.Base(file), cl.line, strings.Join(cl.words, " "), problem)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d command lines found: is the README read?", checked)
	}
}

type commandLine struct {
	line  int
	words []string // after "flotilla"
}

var inlineCode = regexp.MustCompile("`([^`]+)`")

// commandLines finds the flotilla invocations in a Markdown text: in fenced code blocks
// (continuation lines joined) and in inline code spans that start with "flotilla ".
func commandLines(md string) []commandLine {
	var out []commandLine
	lines := strings.Split(md, "\n")
	inBlock := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			for _, m := range inlineCode.FindAllStringSubmatch(l, -1) {
				if strings.HasPrefix(m[1], "flotilla ") {
					out = append(out, invocations(i+1, m[1])...)
				}
			}
			continue
		}
		start := i
		for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
			i++
			l = strings.TrimSuffix(l, "\\") + " " + lines[i]
		}
		out = append(out, invocations(start+1, l)...)
	}
	return out
}

// invocations splits a shell line at ; && || | and keeps the parts that run flotilla.
func invocations(line int, text string) []commandLine {
	if i := strings.Index(text, " #"); i >= 0 {
		text = text[:i]
	}
	var out []commandLine
	for _, part := range regexp.MustCompile(`;|&&|\|\|?`).Split(text, -1) {
		words := strings.Fields(strings.TrimPrefix(strings.TrimSpace(part), "$ "))
		for j, w := range words {
			if w == "flotilla" || strings.HasSuffix(w, "/flotilla") {
				out = append(out, commandLine{line: line, words: words[j+1:]})
				break
			}
			if !strings.Contains(w, "=") { // only environment assignments may come first
				break
			}
		}
	}
	return out
}

// checkCommandLine says what is wrong with a documented command line, or "".
func checkCommandLine(root *cobra.Command, words []string) string {
	var path []string
	cmd := root
	for _, w := range words {
		if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "[") {
			break
		}
		next, _, err := cmd.Find([]string{w})
		if err != nil || next == cmd {
			break
		}
		cmd = next
		path = append(path, w)
	}
	if cmd == root && len(words) > 0 {
		return "no such command"
	}
	if cmd.Annotations[clikit.GroupAnnotation] != "" {
		return "command " + strings.Join(path, " ") + " needs a subcommand"
	}
	for _, w := range words[len(path):] {
		w = strings.Trim(w, "[]()'\",.")
		if !strings.HasPrefix(w, "-") || w == "-" || w == "--" || strings.HasPrefix(w, "---") {
			continue
		}
		name, _, _ := strings.Cut(w, "=")
		var found bool
		if long, ok := strings.CutPrefix(name, "--"); ok {
			found = cmd.Flags().Lookup(long) != nil || cmd.InheritedFlags().Lookup(long) != nil
		} else if len(name) == 2 {
			found = cmd.Flags().ShorthandLookup(name[1:]) != nil || cmd.InheritedFlags().ShorthandLookup(name[1:]) != nil
		} else {
			continue // "key-" of cluster label, a negative number, ...
		}
		if !found {
			return "flotilla " + strings.Join(path, " ") + " has no flag " + name
		}
	}
	return ""
}
