#!/bin/sh
# Never runs: rendering refuses exec plugins before kustomize could start it.
exit 1
