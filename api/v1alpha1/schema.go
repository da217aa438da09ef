package v1alpha1

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
)

// fieldProblem is a decoding problem at a field path.
type fieldProblem struct {
	field, message string
}

var (
	durationType     = reflect.TypeFor[Duration]()
	intOrPercentType = reflect.TypeFor[IntOrPercent]()
)

// checkSchema compares a document, as generic JSON (the output of json.Unmarshal into any),
// with the Go type it will be decoded into, and reports every unknown field and every value of
// the wrong type with its full path. encoding/json would stop at the first and, for an unknown
// field, not say where it is; it also matches field names case-insensitively, which would let
// "Source:" pass for "source:".
func checkSchema(path string, v any, t reflect.Type) []fieldProblem {
	if v == nil {
		// null leaves the field unset, as in encoding/json.
		return nil
	}
	if t == durationType {
		s, ok := v.(string)
		if !ok {
			return []fieldProblem{{path, fmt.Sprintf("must be a duration such as \"90s\", \"1m\" or \"1h30m\", not %s", jsonKind(v))}}
		}
		if _, err := time.ParseDuration(s); err != nil {
			return []fieldProblem{{path, fmt.Sprintf("%q is not a duration: want Go duration syntax such as \"90s\", \"1m\" or \"1h30m\"", s)}}
		}
		return nil
	}
	if t == quantityType {
		return checkQuantity(path, v)
	}
	if t == intOrPercentType {
		var p IntOrPercent
		data, _ := json.Marshal(v)
		if err := p.UnmarshalJSON(data); err != nil {
			return []fieldProblem{{path, err.Error()}}
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkSchema(path, v, t.Elem())
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return []fieldProblem{{path, "must be an object, not " + jsonKind(v)}}
		}
		fields := jsonFields(t)
		var out []fieldProblem
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			f, ok := fields[k]
			if !ok {
				out = append(out, fieldProblem{joinPath(path, k), unknownField(k, fields)})
				continue
			}
			out = append(out, checkSchema(joinPath(path, k), obj[k], f.Type)...)
		}
		return out
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return []fieldProblem{{path, "must be an object, not " + jsonKind(v)}}
		}
		var out []fieldProblem
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			out = append(out, checkSchema(path+"["+k+"]", obj[k], t.Elem())...)
		}
		return out
	case reflect.Slice:
		list, ok := v.([]any)
		if !ok {
			return []fieldProblem{{path, "must be a list, not " + jsonKind(v)}}
		}
		var out []fieldProblem
		for i, e := range list {
			out = append(out, checkSchema(fmt.Sprintf("%s[%d]", path, i), e, t.Elem())...)
		}
		return out
	case reflect.String:
		if _, ok := v.(string); !ok {
			// YAML turns an unquoted 1.10 into the number 1.1 and yes into true; taking
			// those as strings would silently change what the user wrote.
			return []fieldProblem{{path, fmt.Sprintf("must be a string, not %s (quote the value)", jsonKind(v))}}
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return []fieldProblem{{path, "must be true or false, not " + jsonKind(v)}}
		}
	case reflect.Int:
		if n, ok := v.(float64); !ok || n != math.Trunc(n) || math.Abs(n) > 1<<31 {
			return []fieldProblem{{path, "must be a whole number, not " + jsonKind(v)}}
		}
	}
	return nil
}

func joinPath(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// jsonFields maps the JSON names of t's exported fields to the fields. The fleet types have no
// embedded structs, so the names are the tags' first parts.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	fields := make(map[string]reflect.StructField, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f
	}
	return fields
}

func unknownField(k string, fields map[string]reflect.StructField) string {
	known := slices.Sorted(maps.Keys(fields))
	// A suggestion is only worth making when the typo is small next to the word: "a" is not a
	// typo of "url".
	best, bestDist := "", max(1, len(k)/4)+1
	for _, name := range known {
		d := editDistance(name, k)
		if strings.EqualFold(name, k) {
			d = 0
		}
		if d < bestDist {
			best, bestDist = name, d
		}
	}
	if best != "" {
		return fmt.Sprintf("unknown field %q, did you mean %q?", k, best)
	}
	return fmt.Sprintf("unknown field %q (known fields: %s)", k, strings.Join(known, ", "))
}

// editDistance is the Levenshtein distance, for suggesting the field a typo meant.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func jsonKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("the boolean %v", v)
	case float64:
		return fmt.Sprintf("the number %v", v)
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}
