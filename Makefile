# Shortcuts for the README's commands (the scripts work without make).
.PHONY: setup demo test
setup:
	bash scripts/setup.sh
demo:
	bash scripts/demo.sh
test:
	bash scripts/test.sh
