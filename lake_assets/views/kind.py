"""The views kind as registered in lake_assets.kinds: its SQL and handlers; a view has no data of
its own, so it has no Dagster definitions (those reading it depend on the relations it reads)."""

from lake_assets.core.kind import Kind
from lake_assets.views import engine
from lake_assets.views.grammar import STATEMENTS, WORDS, CreateView

KIND = Kind(
    name="view",
    statements=STATEMENTS,
    handlers={CreateView: engine.create_view},
    words=WORDS,
    show=engine.show_views,
    describe=engine.describe_view,
    drop=engine.drop_view,
)
