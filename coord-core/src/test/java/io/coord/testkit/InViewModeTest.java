package io.coord.testkit;

@InViewMode
class InViewModeTest extends OneEngineModeCases {
    InViewModeTest() {
        super(EngineMode.VIEW);
    }
}
