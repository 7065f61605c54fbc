package io.coord.testkit;

@InWatchMode
class InWatchModeTest extends OneEngineModeCases {
    InWatchModeTest() {
        super(EngineMode.WATCH);
    }
}
