"""Widgets of the chat page: message bubbles with Markdown and code blocks, input, settings."""
