package main

import (
	"bytes"

	"github.com/spf13/viper"

	"github.com/wasmkube/wasmkube/internal/config"
)

// readConfigInto checks the config file strictly (internal/config: unknown sections and
// keys, wrong types and moved keys are errors naming the file and the key) and gives its
// settings to v, whose flags and environment variables keep precedence over them.
func readConfigInto(v *viper.Viper, path string) error {
	_, js, err := config.Load(path)
	if err != nil {
		return err
	}
	v.SetConfigType("json")
	return v.ReadConfig(bytes.NewReader(js))
}
