"""The run viewer: a run folder as one self-contained page, written to a file or served on loopback."""

from noosphere.viewer.bundle import load_bundle
from noosphere.viewer.page import render_page, write_page
from noosphere.viewer.server import make_server, serve

__all__ = ["load_bundle", "make_server", "render_page", "serve", "write_page"]
