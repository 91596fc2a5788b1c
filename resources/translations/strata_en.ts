<?xml version='1.0' encoding='utf-8'?>
<TS version="2.1" language="en">
<context>
    <name>DashboardPage</name>
    <message numerus="yes">
        <source>%n request(s) · prefill median %2, p90 %3 · decode median %4, p90 %5 · time to first token median %6, p90 %7</source>
        <translation><numerusform>%n request · prefill median %2, p90 %3 · decode median %4, p90 %5 · time to first token median %6, p90 %7</numerusform><numerusform>%n requests · prefill median %2, p90 %3 · decode median %4, p90 %5 · time to first token median %6, p90 %7</numerusform></translation>
    </message>
    <message numerus="yes">
        <source>%n request(s) to remote engines not in these medians</source>
        <translation><numerusform>%n request to remote engines not in these medians</numerusform><numerusform>%n requests to remote engines not in these medians</numerusform></translation>
    </message>
</context>
<context>
    <name>DocumentsPanel</name>
    <message numerus="yes">
        <source>Documents (%n)</source>
        <translation><numerusform>Documents (%n)</numerusform><numerusform>Documents (%n)</numerusform></translation>
    </message>
    <message numerus="yes">
        <source>, %n pages</source>
        <translation><numerusform>, %n pages</numerusform><numerusform>, %n pages</numerusform></translation>
    </message>
    <message numerus="yes">
        <source>%n passages</source>
        <translation><numerusform>%n passages</numerusform><numerusform>%n passages</numerusform></translation>
    </message>
    <message numerus="yes">
        <source>%n passages have no vectors yet (the embedding engine failed: %1); full-text search works, and the next question tries again.</source>
        <translation><numerusform>%n passages have no vectors yet (the embedding engine failed: %1); full-text search works, and the next question tries again.</numerusform><numerusform>%n passages have no vectors yet (the embedding engine failed: %1); full-text search works, and the next question tries again.</numerusform></translation>
    </message>
</context>
<context>
    <name>EnginesPage</name>
    <message numerus="yes">
        <source>Plan read: %n build(s) to try, %1 first.</source>
        <translation><numerusform>Plan read: %n build to try, %1 first.</numerusform><numerusform>Plan read: %n builds to try, %1 first.</numerusform></translation>
    </message>
    <message numerus="yes">
        <source>%n newer build(s) found; see above.</source>
        <translation><numerusform>%n newer build found; see above.</numerusform><numerusform>%n newer builds found; see above.</numerusform></translation>
    </message>
</context>
<context>
    <name>ImagesPage</name>
    <message numerus="yes">
        <source>%n image(s) in %1 s on %2</source>
        <translation><numerusform>%n image in %1 s on %2</numerusform><numerusform>%n images in %1 s on %2</numerusform></translation>
    </message>
    <message numerus="yes">
        <source>Gallery · %n image(s)</source>
        <translation><numerusform>Gallery · %n image</numerusform><numerusform>Gallery · %n images</numerusform></translation>
    </message>
    <message numerus="yes">
        <source>%n step(s)</source>
        <translation><numerusform>%n step</numerusform><numerusform>%n steps</numerusform></translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message numerus="yes">
        <source>%n task(s) running</source>
        <translation><numerusform>%n task running</numerusform><numerusform>%n tasks running</numerusform></translation>
    </message>
</context>
<context>
    <name>ModelsPage</name>
    <message numerus="yes">
        <source>%n model(s)</source>
        <translation><numerusform>%n model</numerusform><numerusform>%n models</numerusform></translation>
    </message>
    <message numerus="yes">
        <source>%n download(s)</source>
        <translation><numerusform>%n download</numerusform><numerusform>%n downloads</numerusform></translation>
    </message>
    <message numerus="yes">
        <source>%n like(s)</source>
        <translation><numerusform>%n like</numerusform><numerusform>%n likes</numerusform></translation>
    </message>
    <message numerus="yes">
        <source>Downloads %n file(s), %2 in total: %3</source>
        <translation><numerusform>Downloads %n file, %2 in total: %3</numerusform><numerusform>Downloads %n files, %2 in total: %3</numerusform></translation>
    </message>
    <message numerus="yes">
        <source>%n model(s) · %2 on disk</source>
        <translation><numerusform>%n model · %2 on disk</numerusform><numerusform>%n models · %2 on disk</numerusform></translation>
    </message>
</context>
<context>
    <name>NetworkPage</name>
    <message numerus="yes">
        <source>Added {0}: %n model(s).</source>
        <translation><numerusform>Added {0}: %n model.</numerusform><numerusform>Added {0}: %n models.</numerusform></translation>
    </message>
    <message numerus="yes">
        <source>{0} serves %n model(s).</source>
        <translation><numerusform>{0} serves %n model.</numerusform><numerusform>{0} serves %n models.</numerusform></translation>
    </message>
    <message numerus="yes">
        <source>%1 of %n slot(s)</source>
        <translation><numerusform>%1 of %n slot</numerusform><numerusform>%1 of %n slots</numerusform></translation>
    </message>
</context>
<context>
    <name>SearchHitWidget</name>
    <message numerus="yes">
        <source>%1 download(s)</source>
        <translation><numerusform>%1 download</numerusform><numerusform>%1 downloads</numerusform></translation>
    </message>
    <message numerus="yes">
        <source>%1 like(s)</source>
        <translation><numerusform>%1 like</numerusform><numerusform>%1 likes</numerusform></translation>
    </message>
</context>
<context>
    <name>SourcesLabel</name>
    <message numerus="yes">
        <source>The %n most relevant passages of the attached documents went with the question (%1).</source>
        <translation><numerusform>The %n most relevant passages of the attached documents went with the question (%1).</numerusform><numerusform>The %n most relevant passages of the attached documents went with the question (%1).</numerusform></translation>
    </message>
</context>
</TS>