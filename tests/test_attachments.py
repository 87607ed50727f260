"""What may be attached: media types from file names, the limits, and what events say."""

from __future__ import annotations

from pathlib import Path

import pytest

from eve._attachments import (
    AttachmentLimits,
    attachments_of,
    check_attachments,
    read_attachment,
)
from eve.errors import AttachmentError, AttachmentTooLarge, AttachmentUnsupported
from eve.events import Attachment
from eve.messages import DocumentPart, ImagePart, TextPart

#: the smallest valid PNG (1 by 1, RGB)
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de"
    "0000000c4944415408d763f8ffff3f0005fe02fedccc59e70000000049454e44ae426082"
)


def test_a_file_becomes_a_part_of_the_type_its_name_says(tmp_path: Path) -> None:
    (tmp_path / "photo.PNG").write_bytes(PNG)
    (tmp_path / "notes.txt").write_text("hello")
    assert read_attachment(tmp_path / "photo.PNG") == ImagePart(media_type="image/png", data=PNG)
    assert read_attachment(tmp_path / "notes.txt") == DocumentPart(
        media_type="text/plain", data=b"hello", name="notes.txt"
    )


def test_a_file_no_model_takes_is_refused_by_name(tmp_path: Path) -> None:
    for name, said in [("notes.md", "is text/markdown"), ("blob", "does not tell its type")]:
        (tmp_path / name).write_text("x")
        with pytest.raises(AttachmentUnsupported, match=said) as refused:
            read_attachment(tmp_path / name)
        assert refused.value.source == str(tmp_path / name)
        assert "image/png" in str(refused.value)  # the message lists what is taken
    with pytest.raises(AttachmentError, match="cannot read"):
        read_attachment(tmp_path / "missing.png")


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    (tmp_path / "big.png").write_bytes(PNG)
    with pytest.raises(AttachmentTooLarge) as refused:
        read_attachment(tmp_path / "big.png", limits=AttachmentLimits(each=len(PNG) - 1))
    assert (refused.value.limit, refused.value.size) == (len(PNG) - 1, len(PNG))
    assert refused.value.http_status == 413


def test_parts_are_checked_for_their_kind_scheme_and_size() -> None:
    limits = AttachmentLimits(each=10, total=15)
    image = ImagePart(media_type="image/png", data=b"x" * 8)
    check_attachments([TextPart(text="hi"), image], limits)
    with pytest.raises(AttachmentUnsupported, match=r"\$\.message\[0\] is application/pdf"):
        check_attachments([ImagePart(media_type="application/pdf", data=b"x")], limits)
    with pytest.raises(AttachmentUnsupported, match="image/tiff"):
        check_attachments([ImagePart(media_type="image/tiff", data=b"x")], limits)
    with pytest.raises(AttachmentUnsupported, match="not http:// or https://"):
        check_attachments([DocumentPart(media_type="application/pdf", url="file:///x")], limits)
    with pytest.raises(AttachmentTooLarge, match=r"\$\.message\[1\] has 11 bytes"):
        check_attachments(
            [TextPart(text="a"), ImagePart(media_type="image/gif", data=b"x" * 11)], limits
        )
    with pytest.raises(AttachmentTooLarge, match="together has 16 bytes; the limit is 15"):
        check_attachments([image, image], limits)


def test_events_describe_attachments_without_their_content() -> None:
    parts = [
        TextPart(text="look"),
        ImagePart(media_type="image/png", data=PNG),
        DocumentPart(media_type="application/pdf", url="https://example.com/a.pdf", name="a.pdf"),
    ]
    assert attachments_of(parts) == [
        Attachment(type="image", media_type="image/png", size=len(PNG)),
        Attachment(
            type="document",
            media_type="application/pdf",
            name="a.pdf",
            url="https://example.com/a.pdf",
        ),
    ]
