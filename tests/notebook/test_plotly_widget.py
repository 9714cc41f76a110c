"""The dashboard's figures: plotly's FigureWidget, whose 5 MB script the front end receives
once per kernel, in one hidden widget, rather than once per figure."""

import plotly.graph_objects as go

from hypersched_nb.notebook._front_end import close_tree
from hypersched_nb.notebook._plotly_widget import figure_widget


def plotly_script() -> str:
    return str(go.FigureWidget._esm)


def test_a_figure_sends_a_loader_and_names_the_one_widget_that_holds_the_script():
    first, second = figure_widget(), figure_widget(layout={"width": 300})
    script = plotly_script()
    assert len(script) > 1_000_000  # what plotly's own FigureWidget sends with every figure
    for figure in (first, second):
        state = figure.get_state()
        assert len(state["_esm"]) < 2_000
        assert state["_plotly"] == f"IPY_MODEL_{first._plotly.model_id}"
    assert first._plotly is second._plotly
    assert first._plotly.get_state()["code"] == script


def test_it_is_plotlys_figure_widget_in_python():
    figure = figure_widget({"data": [{"y": [1, 3, 2]}], "layout": {"width": 300}})
    assert isinstance(figure, go.FigureWidget)
    figure.add_scatter(y=[2, 2])
    figure.data[0].y = [3, 2, 1]
    assert [list(trace.y) for trace in figure.data] == [[3, 2, 1], [2, 2]]
    assert figure.layout.width == 300


def test_closing_a_dashboards_figures_leaves_the_script_for_the_next_one():
    import ipywidgets as w

    box = w.VBox([figure_widget(), figure_widget()])
    shared = box.children[0]._plotly
    close_tree(box)  # what a finished dashboard does
    assert shared.comm is not None
    assert figure_widget()._plotly is shared


def test_a_script_widget_closed_by_someone_else_is_made_again():
    import ipywidgets as w

    shared = figure_widget()._plotly
    shared.close()  # as w.Widget.close_all() would
    again = figure_widget()._plotly
    assert again is not shared and again.comm is not None
    assert isinstance(again, w.Widget)


def test_a_front_end_that_asks_for_the_state_gets_the_figure_as_it_stands():
    # what a page reloaded during a search asks for: plotly's own answer is the first state
    figure = figure_widget({"data": [{"y": [1, 3, 2]}]})
    figure.add_scatter(y=[5, 1])
    with figure.editing:  # as the dashboard's thread changes it
        figure.data[0].y = [3, 2, 1]
        figure.layout.width = 333
    state = figure.get_state()
    assert [list(trace["y"]) for trace in state["_widget_data"]] == [[3, 2, 1], [5, 1]]
    assert state["_widget_layout"]["width"] == 333
    assert set(figure.get_state("_esm")) == {"_esm"}  # one trait asked for, one given


def test_the_installed_anywidget_front_end_gives_a_module_the_widget_manager():
    # the loader asks anywidget's model for `widget_manager.get_model`, which anywidget
    # 0.9-0.11 gives and says it may narrow: an upgrade that drops it fails here, not on a page
    import sys
    from pathlib import Path

    static = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "anywidget" / "static"
    scripts = "".join(path.read_text(errors="replace") for path in static.glob("*.js"))
    assert scripts, f"anywidget's front end is not installed in {static}"
    assert "widget_manager: model.widget_manager" in scripts
