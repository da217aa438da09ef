package desired

import (
	"fmt"
	"reflect"
	"time"
)

// filler fills every field of a value with a value of its own: the n-th string is "s<n>",
// the n-th number n (a duration n seconds, which survives the wire's seconds and
// milliseconds), every bool true, every slice and map two entries. Nothing is left zero, so
// that a field a conversion drops shows.
type filler struct{ n int }

func (f *filler) next() int { f.n++; return f.n }

func (f *filler) fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", f.next()))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := int64(f.next())
		if v.Type() == reflect.TypeFor[time.Duration]() {
			n *= int64(time.Second)
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(f.next()))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(f.next()))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		f.fill(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i))
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			f.fill(v.Index(i))
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			f.fill(k)
			f.fill(e)
			v.SetMapIndex(k, e)
		}
	case reflect.Interface:
		// Helm values: what a YAML or JSON document holds; a string survives JSON as itself.
		v.Set(reflect.ValueOf(fmt.Sprintf("s%d", f.next())))
	default:
		panic(fmt.Sprintf("filler: no value for a %s", v.Type()))
	}
}

// filled returns a T with every field filled.
func filled[T any]() T {
	var v T
	(&filler{}).fill(reflect.ValueOf(&v).Elem())
	return v
}
