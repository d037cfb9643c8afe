"""MkDocs hook: each registered system's pages in the manual's navigation (``peftir.systems``: ``System.manual``), so
a system's pages are listed without an edit of ``mkdocs.yml``. ``mkdocs.yml`` names the sections and the pages no
system owns (a section's overview); each system's pages follow them in their section, in the systems' order."""
from __future__ import annotations

from peftir.systems import registered


def systems_nav(nav: list) -> list:
    """``nav`` (``mkdocs.yml``'s) with every registered system's pages appended to the sections they name; a section
    ``mkdocs.yml`` does not have is refused, naming the system."""
    sections = {title: entries for item in nav if isinstance(item, dict) for title, entries in item.items()
                if isinstance(entries, list)}
    for system in registered():
        for section, pages in system.manual.items():
            if section not in sections:
                raise ValueError(f"system {system.name} lists pages under {section!r}, which mkdocs.yml's nav does "
                                 f"not have (sections: {', '.join(sections)})")
            sections[section] += [{title: page} for title, page in pages]
    return nav


def on_config(config):   # MkDocs' hook signature
    config["nav"] = systems_nav(config["nav"])
    return config
