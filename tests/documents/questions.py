"""Twenty questions on a real public-domain document with known answer passages.

The document: SQLite's "C-language Interface Specification for SQLite" (``capi3ref.html``, ~470,000
characters of text: ~160 printed pages), written by SQLite's authors, who dedicated it to the public
domain (https://www.sqlite.org/copyright.html), as shipped by Debian's ``sqlite3-doc`` package
(installed by scripts/setup-system.sh). Each answer passage is named by the heading of the section
that answers it; the questions are asked in other words than the heading's.
"""

from __future__ import annotations

from pathlib import Path

DOCUMENT = Path("/usr/share/doc/sqlite3/capi3ref.html")

QUESTIONS: tuple[tuple[str, str], ...] = (
    ("How do I make a locked database be retried for a while instead of failing at once?", "Set A Busy Timeout"),
    ("How can another thread stop a query that has been running for too long?", "Interrupt A Long-Running Query"),
    ("What is the rowid of the row most recently inserted on a connection?", "Last Insert Rowid"),
    ("How do I read part of a blob without loading all of it into memory?", "Read Data From A BLOB Incrementally"),
    ("How can a program tell whether the library was compiled to be safe for threads?",
     "Test To See If The Library Is Threadsafe"),
    ("How do I run a checkpoint on a write-ahead log database by hand?", "Checkpoint a database"),
    ("How do I add my own SQL function written in C?", "Create Or Redefine SQL Functions"),
    ("How can I give a value to a parameter of a prepared statement?", "Binding Values To Prepared Statements"),
    ("How do I open a connection to a database file?", "Opening A New Database Connection"),
    ("How many rows did the last INSERT, UPDATE or DELETE change?", "Count The Number Of Rows Modified"),
    ("How do I turn a whole database into a byte array in memory?", "Serialize a database"),
    ("How can I put an upper bound on the heap memory SQLite allocates?", "Impose A Limit On Heap Size"),
    ("How do I get the English text describing the most recent error?", "Error Codes And Messages"),
    ("How can I be called back whenever a row is inserted, updated or deleted?", "Data Change Notification Callbacks"),
    ("How do I check that a string holds a complete SQL statement ending in a semicolon?",
     "Determine If An SQL Statement Is Complete"),
    ("How can a program load an extension shared library while it runs?", "Load An Extension"),
    ("How do I copy a live database into another one while it is in use?", "Online Backup API"),
    ("Which version of the library is linked in at run time?", "Run-Time Library Version Numbers"),
    ("How do I get random bytes from SQLite's random number generator?", "Pseudo-Random Number Generator"),
    ("How does a virtual table's xCreate method tell SQLite what columns the table has?",
     "Declare The Schema Of A Virtual Table"),
)
