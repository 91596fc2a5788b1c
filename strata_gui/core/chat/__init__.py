"""Conversations: the SQLite store and the chat session logic (engine fallback included)."""
