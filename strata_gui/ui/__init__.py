"""Qt widgets. Talks to the core only through services passed in and ui.bridge."""
