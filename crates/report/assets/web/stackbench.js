// stackbench pages: builds every page of `stackbench serve` and `report.html` from the page
// model in the JSON script element `#page-data` (crates/report/src/report/pages/), and draws
// every chart with the vendored ECharts. One chart code for every page.
//
// Safety: everything from run files (benchmark names, labels, reasons) reaches the DOM
// through textContent or attribute properties, never innerHTML; tooltips are elements
// built the same way (ECharts accepts an HTMLElement from a formatter). Chart text is drawn
// on a canvas, which parses nothing.
//
// For tests and screenshots: window.stackbench.charts maps each chart id to its ECharts
// instance, and window.stackbench.ready turns true once the page is built.
(function () {
  'use strict';

  var source = document.getElementById('page-data');
  var data = JSON.parse(source.textContent);
  var links = data.links || {};
  var app = document.getElementById('app');
  var state = { charts: {}, models: {}, printed: {}, ready: false, data: data, draw: drawChart };
  window.stackbench = state;

  // ---- DOM helpers -------------------------------------------------------------------

  function el(tag, props) {
    var node = document.createElement(tag);
    if (props) {
      Object.keys(props).forEach(function (k) {
        if (k === 'class') node.className = props[k];
        else if (k === 'text') node.textContent = props[k];
        else node[k] = props[k];
      });
    }
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }

  function append(node, child) {
    if (child === null || child === undefined) return;
    if (Array.isArray(child)) child.forEach(function (c) { append(node, c); });
    else if (child instanceof Node) node.appendChild(child);
    else node.appendChild(document.createTextNode(String(child)));
  }

  function href(kind, id) {
    var base = links[kind] || '';
    return id === undefined ? base : base + encodeURIComponent(id);
  }

  function link(kind, id, text) {
    return el('a', { href: href(kind, id), text: text === undefined ? id : text });
  }

  function code(text) { return el('code', { text: text }); }

  function statusCell(status) {
    return el('span', { class: 'status ' + String(status).replace(/[^a-z]/g, '-'), text: status });
  }

  function table(headers, rows, cls) {
    var t = el('table', { class: cls || '' });
    var head = el('tr');
    headers.forEach(function (h) { head.appendChild(el('th', { text: h })); });
    t.appendChild(el('thead', null, head));
    var body = el('tbody');
    rows.forEach(function (row) {
      var tr = el('tr');
      row.forEach(function (cell) { tr.appendChild(el('td', null, cell)); });
      body.appendChild(tr);
    });
    t.appendChild(body);
    return t;
  }

  function section(id, title) {
    var s = el('section', { id: id });
    if (title) s.appendChild(el('h2', { text: title }));
    return s;
  }

  // ---- numbers -----------------------------------------------------------------------

  function trim(x, digits) {
    var s = x.toFixed(digits);
    return s.indexOf('.') >= 0 ? s.replace(/\.?0+$/, '') : s;
  }

  function fmtNumber(v) {
    if (v === null || v === undefined || !isFinite(v)) return 'n/a';
    var a = Math.abs(v);
    if (a >= 10000) return trim(v / 1000, 0) + 'k';
    if (a >= 100) return trim(v, 0);
    if (a >= 10) return trim(v, 1);
    if (a >= 1) return trim(v, 2);
    if (a === 0) return '0';
    return String(Number(v.toPrecision(3)));
  }

  function fmtNs(ns) {
    if (ns === null || ns === undefined || !isFinite(ns)) return 'n/a';
    var a = Math.abs(ns);
    if (a >= 1e9) return trim(ns / 1e9, 3) + ' s';
    if (a >= 1e6) return trim(ns / 1e6, 3) + ' ms';
    if (a >= 1e3) return trim(ns / 1e3, 3) + ' µs';
    return trim(ns, 2) + ' ns';
  }

  function fmtPercent(p) {
    if (p === null || p === undefined || !isFinite(p)) return 'n/a';
    return (p > 0 ? '+' : '') + p.toFixed(1) + ' %';
  }

  function fmtBinary(v, suffix, plain) {
    var steps = [['Ti', 1099511627776], ['Gi', 1073741824], ['Mi', 1048576], ['Ki', 1024]];
    for (var i = 0; i < steps.length; i++) {
      if (Math.abs(v) >= steps[i][1]) return trim(v / steps[i][1], 1) + ' ' + steps[i][0] + suffix;
    }
    return trim(v, 1) + plain;
  }

  function tickFormatter(kind) {
    switch (kind) {
      case 'bytes': return function (v) { return fmtBinary(v, 'B', ' B'); };
      case 'elements': return function (v) { return fmtBinary(v, '', '').replace(' ', ''); };
      case 'integer': return function (v) { return Number.isInteger(v) ? String(v) : ''; };
      case 'duration': return fmtNs;
      default: return fmtNumber;
    }
  }

  // ---- charts ------------------------------------------------------------------------

  var MARK_COLOURS = { step: '#b00020', acknowledged: '#1b7f3b' };

  function tooltipFor(chart, params) {
    var box = el('div', { class: 'tip' });
    box.appendChild(el('div', { class: 'tip-series', text: params.seriesName || '' }));
    var d = params.data || {};
    if (params.componentType === 'markLine') {
      box.appendChild(el('div', { text: params.name || '' }));
      return box;
    }
    var text = d.text;
    if (!text) {
      var y = Array.isArray(d.value) ? d.value[1] : d.value;
      text = fmtNumber(y);
    }
    box.appendChild(el('div', { class: 'tip-value', text: text }));
    if (d.run) {
      box.appendChild(el('div', null, 'run ', link('run', d.run, d.run)));
    }
    return box;
  }

  function log2Bounds(series) {
    var lo = Infinity, hi = -Infinity;
    series.forEach(function (s) {
      s.points.forEach(function (p) {
        if (p.x > 0) { lo = Math.min(lo, p.x); hi = Math.max(hi, p.x); }
      });
    });
    if (!isFinite(lo)) return {};
    // Whole powers of two around the data: the ticks are powers of two, even for one point.
    return { min: Math.pow(2, Math.floor(Math.log2(lo)) - (lo === hi ? 1 : 0)),
             max: Math.pow(2, Math.ceil(Math.log2(hi)) + (lo === hi ? 1 : 0)) };
  }

  function axisName(axis) { return axis.title || ''; }

  function lineOption(chart) {
    var log = chart.x.scale === 'log2';
    var bounds = log ? log2Bounds(chart.series) : {};
    var series = [];
    chart.series.forEach(function (s, i) {
      var reference = s.style === 'reference';
      var data = s.points.map(function (p) {
        return { value: [p.x, p.y === null || p.y === undefined ? null : p.y], text: p.text, run: p.run };
      });
      var item = {
        type: 'line', name: s.name, data: data, connectNulls: false,
        showSymbol: !reference, showAllSymbol: true, symbolSize: reference ? 0 : 6,
        lineStyle: { width: reference ? 1 : 2, type: reference ? 'dashed' : 'solid' },
        emphasis: { focus: 'series' }, animation: false
      };
      if (s.colour) { item.itemStyle = { color: s.colour }; item.lineStyle.color = s.colour; }
      if (i === 0 && chart.marks && chart.marks.length) {
        item.markLine = {
          symbol: 'none', animation: false,
          label: { show: true, position: 'insideEndTop', formatter: function (m) { return m.data.short; } },
          data: chart.marks.map(function (m) {
            return { xAxis: m.x, name: m.label, short: m.kind === 'step' ? 'step' : 'ack',
                     lineStyle: { color: MARK_COLOURS[m.kind] || '#777', type: 'dashed', width: 1.5 } };
          })
        };
      }
      series.push(item);
      var ranged = s.points.filter(function (p) { return p.range; });
      if (ranged.length) {
        var bars = [];
        ranged.forEach(function (p) {
          bars.push({ value: [p.x, p.range[0]], text: p.text });
          bars.push({ value: [p.x, p.range[1]], text: p.text });
          bars.push({ value: [p.x, null] });
        });
        series.push({ type: 'line', name: s.name + ' p99..p50', data: bars, connectNulls: false,
                      showSymbol: false, lineStyle: { width: 1, color: s.colour }, animation: false });
      }
    });
    var xAxis = {
      type: log ? 'log' : 'value', name: axisName(chart.x), nameLocation: 'middle', nameGap: 28,
      axisLabel: { formatter: tickFormatter(chart.x.ticks), hideOverlap: true },
      splitLine: { show: false }
    };
    if (log) { xAxis.logBase = 2; xAxis.min = bounds.min; xAxis.max = bounds.max; }
    else { xAxis.scale = true; }
    if (chart.x.ticks === 'integer') xAxis.minInterval = 1;
    return {
      xAxis: xAxis,
      yAxis: {
        // Byte ticks (`953.7 MiB`) are wider than numbers: the title keeps clear of them.
        type: 'value', name: axisName(chart.y), nameLocation: 'middle', nameGap: chart.y.ticks === 'bytes' ? 72 : 56,
        scale: chart.y.ticks === 'duration',
        axisLabel: { formatter: tickFormatter(chart.y.ticks) }
      },
      series: series,
      dataZoom: [
        { type: 'inside', xAxisIndex: 0, filterMode: 'none' },
        { type: 'slider', xAxisIndex: 0, filterMode: 'none', height: 16, bottom: 6,
          labelFormatter: function (v) { return tickFormatter(chart.x.ticks)(v); } }
      ]
    };
  }

  function barOption(chart) {
    var categories = chart.y.categories || [];
    var series = chart.series.map(function (s) {
      var data = categories.map(function () { return null; });
      s.points.forEach(function (p) {
        data[p.x] = { value: p.y, text: p.text, run: p.run };
      });
      var item = { type: 'bar', name: s.name, data: data, stack: s.stack || undefined,
                   barMaxWidth: 18, animation: false };
      if (s.colour) item.itemStyle = { color: s.colour };
      return item;
    });
    return {
      xAxis: { type: 'value', name: axisName(chart.x), nameLocation: 'middle', nameGap: 26,
               axisLabel: { formatter: tickFormatter(chart.x.ticks) } },
      yAxis: { type: 'category', data: categories, inverse: true,
               axisLabel: { width: 260, overflow: 'truncate', interval: 0 } },
      series: series
    };
  }

  function drawChart(container, chart) {
    if (state.charts[chart.id]) return state.charts[chart.id];
    var bars = chart.y.scale === 'category';
    var rows = bars ? (chart.y.categories || []).length : 0;
    container.style.height = (bars ? Math.max(260, 90 + 22 * rows) : 360) + 'px';
    var instance = echarts.init(container, null, { renderer: 'canvas' });
    var option = bars ? barOption(chart) : lineOption(chart);
    option.animation = false;
    option.legend = { type: 'scroll', top: 0, left: 8, right: 8 };
    option.grid = { left: 12, right: 24, top: 40, bottom: bars ? 34 : 58, containLabel: true };
    option.tooltip = {
      trigger: 'item', confine: true, enterable: true, className: 'sb-tooltip',
      formatter: function (params) { return tooltipFor(chart, params); }
    };
    instance.setOption(option);
    state.charts[chart.id] = instance;
    state.models[chart.id] = chart;
    return instance;
  }

  // A chart in a figure: its title as HTML (wraps, never clipped), the plot, its note;
  // an empty chart is said to be missing, never silently absent.
  function figure(chart, lazy) {
    var fig = el('figure', { class: 'chart' });
    fig.dataset.chart = chart.id;
    fig.appendChild(el('figcaption', { class: 'chart-title', text: chart.title }));
    var empty = chart.series.every(function (s) {
      return s.points.every(function (p) { return p.y === null || p.y === undefined; });
    });
    if (empty) {
      fig.classList.add('nochart');
      fig.appendChild(el('p', { class: 'nochart', text: 'not in this run' + (chart.note ? ' (' + chart.note + ')' : '') }));
      return fig;
    }
    var plot = el('div', { class: 'plot' });
    fig.appendChild(plot);
    if (chart.note) fig.appendChild(el('p', { class: 'note', text: chart.note }));
    if (lazy) fig.sbDraw = function () { drawChart(plot, chart); };
    else pending.push(function () { drawChart(plot, chart); });
    return fig;
  }

  var pending = [];

  // Charts inside a <details> are drawn when it opens (1,000 histories stay fast).
  function lazyDetails(details, figures) {
    function draw() { figures.forEach(function (f) { if (f.sbDraw) { f.sbDraw(); f.sbDraw = null; } }); }
    details.addEventListener('toggle', function () { if (details.open) draw(); });
    if (details.open) pending.push(draw);
  }

  // On paper nothing can be clicked open or scrolled: the compatibility maps print open,
  // and a chart's legend lists every series (wrapped over as many lines as it needs, the
  // plot moved down by as much) instead of a page of them behind scroll arrows.
  function printLayout() {
    document.querySelectorAll('details.compatibility').forEach(function (d) { d.open = true; });
    Object.keys(state.charts).forEach(function (id) {
      var instance = state.charts[id], chart = state.models[id];
      // Printed once: a second print must not move the plot down again.
      if (state.printed[id]) return;
      state.printed[id] = true;
      var width = Math.max(200, instance.getWidth() - 16);
      var used = 0, rows = 1;
      chart.series.forEach(function (s) {
        // About 6.5 px a character at the legend's 12 px, plus the symbol and gap.
        var item = 35 + 6.5 * String(s.name).length;
        if (used > 0 && used + item > width) { rows += 1; used = 0; }
        used += item;
      });
      if (rows === 1) return;
      var extra = 20 * (rows - 1);
      var container = instance.getDom();
      container.style.height = (container.clientHeight + extra) + 'px';
      // A legend of another type is a new component: it gets its whole placement again.
      instance.setOption({ legend: { type: 'plain', top: 0, left: 8, right: 8 }, grid: { top: 40 + extra } });
      instance.resize();
    });
  }
  window.addEventListener('beforeprint', printLayout);
  state.printLayout = printLayout;

  window.addEventListener('resize', function () {
    Object.keys(state.charts).forEach(function (k) { state.charts[k].resize(); });
  });

  // ---- pages -------------------------------------------------------------------------

  function nav(current) {
    var items = [['runs', 'Runs'], ['comparisons', 'Comparisons'], ['hardware', 'Hardware'], ['sweeps', 'Sweeps']];
    var n = el('nav');
    items.forEach(function (item) {
      var a = el('a', { href: href(item[0]), text: item[1] });
      if (item[0] === current) a.className = 'current';
      n.appendChild(a);
    });
    return n;
  }

  function runName(r) { return r.label || r.run_id; }

  function runsTable(runs, anchors) {
    return table(
      ['run', 'time', 'label', 'revision', 'hardware', 'benchmarks', 'failed', 'skipped'],
      runs.map(function (r) {
        var name = link('run', r.run_id, r.run_id);
        if (anchors) { name = el('span', { id: 'run-' + r.run_id }, code(r.run_id)); }
        var rev = r.git_revision ? code(r.git_revision + (r.git_dirty ? ' (dirty)' : '')) : '';
        return [name, r.timestamp, r.label || '', rev, r.hardware ? code(r.hardware) : '',
                String(r.benchmarks), String(r.failed), String(r.skipped)];
      }), 'runs');
  }

  function renderRuns(page) {
    app.appendChild(nav('runs'));
    app.appendChild(el('h1', { text: 'Runs' }));
    var form = el('form', { method: 'get', action: href('runs'), class: 'filter' });
    ['label', 'revision', 'hardware', 'suite'].forEach(function (name) {
      var input = el('input', { name: name, value: (page.filter && page.filter[name]) || '' });
      if (name === 'hardware' && page.hardware.length) input.setAttribute('list', 'hardware-list');
      form.appendChild(el('label', null, name + ' ', input));
    });
    var list = el('datalist', { id: 'hardware-list' });
    page.hardware.forEach(function (h) { list.appendChild(el('option', { value: h })); });
    form.appendChild(list);
    form.appendChild(el('button', { type: 'submit', text: 'filter' }));
    app.appendChild(form);
    app.appendChild(el('p', { text: page.runs.length + ' of ' + page.total + ' runs' }));
    problems(page.problems);
    app.appendChild(runsTable(page.runs, false));
  }

  function problems(list) {
    (list || []).forEach(function (p) { app.appendChild(el('p', { class: 'suspect', text: 'run not read: ' + p })); });
  }

  function runBody(page, parent, lazy) {
    var r = page.run;
    parent.appendChild(el('p', null,
      'run ', code(r.run_id), ' · ', r.timestamp,
      r.git_revision ? [' · revision ', code(r.git_revision)] : '',
      r.hardware ? [' · hardware ', code(r.hardware)] : '',
      r.suites.length ? ' · suite ' + r.suites.join(', ') : '',
      page.before ? [' · against ', link('run', page.before, page.before)] : ''));
    var grid = el('div', { class: 'charts' });
    var figures = page.charts.map(function (c) { return figure(c, lazy); });
    figures.forEach(function (f) { grid.appendChild(f); });
    parent.appendChild(grid);
    if (page.not_measured.length) {
      parent.appendChild(el('h3', { text: 'Not measured' }));
      parent.appendChild(table(['outcome', 'benchmark', 'reason'], page.not_measured.map(function (n) {
        return [statusCell(n.outcome), code(n.id), n.reason];
      })));
    }
    parent.appendChild(el('h3', { text: 'Accuracy (error against a float64 reference)' }));
    if (page.accuracy_line) parent.appendChild(el('p', { text: page.accuracy_line }));
    else parent.appendChild(table(page.accuracy.headers, page.accuracy.rows));
    parent.appendChild(el('h3', { text: 'Telemetry' }));
    if (page.telemetry_line) parent.appendChild(el('p', { text: page.telemetry_line }));
    else parent.appendChild(table(page.telemetry.headers, page.telemetry.rows));
    if (page.notes.length) {
      parent.appendChild(el('h3', { text: 'Notes on benchmarks' }));
      var ul = el('ul');
      page.notes.forEach(function (n) { ul.appendChild(el('li', null, code(n[0]), ': ' + n[1])); });
      parent.appendChild(ul);
    }
    return figures;
  }

  function renderRun(page) {
    app.appendChild(nav('run'));
    app.appendChild(el('h1', { text: 'Run ' + runName(page.run) }));
    runBody(page, app, false);
  }

  function hardwareTable(history) {
    return table(['hardware', 'status', 'points', 'baseline', 'latest', 'change', 'steps', 'acknowledged'],
      history.hardware.map(function (h) {
        return [code(h.hardware), statusCell(h.status), String(h.measured), fmtNs(h.baseline_ns),
                fmtNs(h.latest_ns), fmtPercent(h.latest_vs_baseline_percent),
                h.steps.map(function (s) { return fmtPercent(s.change_percent) + ' at ' + s.run_id; }).join('; '),
                h.acknowledged ? h.acknowledged.reason + ' (' + h.acknowledged.who + ')' : ''];
      }));
  }

  function renderHistory(page) {
    app.appendChild(nav('history'));
    app.appendChild(el('h1', null, 'History of ', code(page.bench_id)));
    app.appendChild(el('p', { text: 'Threshold ' + page.threshold_percent + ' %. Each point links to its run; dashed red lines are steps, green ones acknowledged shifts.' }));
    app.appendChild(hardwareTable(page));
    app.appendChild(figure(page.chart, false));
  }

  function comparisonsTable(list) {
    return table(['id', 'created', 'kind', 'baseline', 'candidate', 'verdict', 'degraded', 'improved', 'unchanged', 'inconclusive'],
      list.map(function (c) {
        return [link('comparison', String(c.id), '#' + c.id), c.created, c.kind, code(c.baseline), code(c.candidate),
                statusCell(c.verdict), String(c.degraded), String(c.improved), String(c.unchanged), String(c.inconclusive)];
      }), 'comparisons');
  }

  function renderComparisons(page) {
    app.appendChild(nav('comparisons'));
    app.appendChild(el('h1', { text: 'Comparisons' }));
    if (!page.comparisons.length) app.appendChild(el('p', { text: 'No comparisons stored yet (compare and gate record theirs).' }));
    else app.appendChild(comparisonsTable(page.comparisons));
  }

  function comparisonBody(page, parent, lazy) {
    parent.appendChild(el('p', null,
      page.kind ? page.kind + ': ' : '', code(page.baseline), ' → ', code(page.candidate), ' · verdict ',
      statusCell(page.verdict),
      page.threshold_percent !== null && page.threshold_percent !== undefined ? ' · threshold ' + page.threshold_percent + ' %' : '',
      page.baseline_run_id ? [' · baseline run ', link('run', page.baseline_run_id)] : '',
      page.candidate_run_id ? [' · candidate run ', link('run', page.candidate_run_id)] : ''));
    parent.appendChild(table(['status', 'benchmark', 'baseline', 'candidate', 'change', '95 % CI', 'q', 'throughput'],
      page.rows.map(function (r) {
        return [statusCell(r.status), link('history', r.id, r.id), r.baseline, r.candidate, r.change, r.ci, r.q, r.throughput];
      }), 'comparison-rows'));
    if (page.unmeasured.length) {
      parent.appendChild(el('h3', { text: 'Not measured on one side' }));
      parent.appendChild(table(['status', 'benchmark', 'error'], page.unmeasured.map(function (u) {
        return [statusCell(u.status), code(u.id), u.error];
      })));
    }
    if (page.accuracy && page.accuracy.length) {
      parent.appendChild(el('h3', { text: 'Accuracy (error against a float64 reference)' }));
      parent.appendChild(table(['accuracy', 'benchmark', 'change'], page.accuracy.map(function (a) {
        return [statusCell(a[0]), code(a[1]), a[2]];
      })));
    }
    var fig = figure(page.chart, lazy);
    parent.appendChild(fig);
    return [fig];
  }

  function renderComparison(page) {
    app.appendChild(nav('comparison'));
    app.appendChild(el('h1', { text: 'Comparison' + (page.id ? ' #' + page.id : '') }));
    comparisonBody(page, app, false);
  }

  function hardwareBody(page, parent) {
    parent.appendChild(el('p', { text: page.legend }));
    parent.appendChild(el('h3', { text: 'Recommendation matrix' }));
    parent.appendChild(table(page.recommendation.headers, page.recommendation.rows));
    parent.appendChild(el('h3', { text: 'Figures by workload' }));
    parent.appendChild(table(page.figures.headers, page.figures.rows));
  }

  function renderHardware(page) {
    app.appendChild(nav('hardware'));
    app.appendChild(el('h1', { text: 'Cross-hardware matrix' }));
    hardwareBody(page, app);
  }

  // ---- model sweeps -----------------------------------------------------------------

  // The matrix: a pick or the reason there is none in every cell, never a blank.
  function matrixTable(page) {
    var cell = function (c) { return el('span', { class: 'verdict ' + c.status.replace(/_/g, '-'), text: c.text }); };
    return table(['model', 'phase'].concat(page.matrix_columns, ['best']),
      page.matrix.map(function (r) {
        return [r.model, r.phase].concat(r.cells.map(cell), [cell(r.pick)]);
      }), 'matrix');
  }

  function chartGrid(parent, charts) {
    var grid = el('div', { class: 'charts' });
    charts.forEach(function (c) { grid.appendChild(figure(c, false)); });
    parent.appendChild(grid);
  }

  function sweepBody(page, parent) {
    var rec = page.recommendation;
    var slos = rec.slos.length ? rec.slos.map(function (s) { return s.text; }).join(', ') : 'none';
    parent.appendChild(el('p', { text: 'The newest sweep of each machine. SLO: ' + slos + '; rank: ' + rec.rank +
      '. Only measured cells: nothing is interpolated across batch, sequence length or hardware.' }));
    parent.appendChild(el('h3', { text: 'Recommendation matrix' }));
    parent.appendChild(matrixTable(page));
    // What each row's figures are (isolated calls, or requests under load ranked by
    // goodput) where serve rows exist, and the rows left out: recommend's own lines.
    if (page.basis.length) {
      var list = el('ul', { class: 'basis' });
      page.basis.forEach(function (line) { list.appendChild(el('li', { text: line })); });
      parent.appendChild(list);
    }
    parent.appendChild(el('h3', { text: 'Hardware comparison' }));
    chartGrid(parent, page.hardware_charts);
    parent.appendChild(el('h3', { text: 'Throughput by batch size' }));
    chartGrid(parent, page.batch_charts);
    parent.appendChild(el('h3', { text: 'Peak memory by sequence length' }));
    if (!page.memory_charts.length) parent.appendChild(el('p', { text: 'No workload with a sequence axis was measured.' }));
    chartGrid(parent, page.memory_charts);
    parent.appendChild(el('h3', { text: 'Compatibility maps' }));
    page.hardware.forEach(function (h) {
      var d = el('details', { class: 'compatibility' },
        el('summary', { text: h.device + ' (' + h.fingerprint + '), run ' + h.run_id + ': ' + h.measured +
          ' measured, ' + h.failed + ' failed, ' + h.skipped + ' skipped' }));
      d.appendChild(table(['outcome', 'cell', 'detail'], h.compatibility.map(function (c) {
        return [statusCell(c.outcome), code(c.id), c.detail];
      })));
      parent.appendChild(d);
    });
  }

  function renderSweep(page) {
    app.appendChild(nav('sweeps'));
    app.appendChild(el('h1', { text: 'Model sweeps' }));
    sweepBody(page, app);
  }

  // ---- report.html -------------------------------------------------------------------

  function family(id) { return String(id).split('/')[0]; }

  function renderSnapshot(page) {
    app.appendChild(el('h1', null, 'Benchmark report: ', statusCell(page.status)));
    app.appendChild(el('p', { text: 'Generated ' + page.generated + ' · threshold ' + page.threshold_percent + ' %' }));
    var toc = el('nav');
    [['latest-run', 'Latest run'], ['regressions', 'Regressions'], ['hardware-groups', 'Latest vs baseline'],
     ['histories', 'History'], ['runs', 'Runs'], ['comparisons', 'Comparisons'], ['hardware', 'Hardware']]
      .concat(page.sweeps ? [['sweeps', 'Model sweeps']] : [])
      .forEach(function (t) { toc.appendChild(el('a', { href: '#' + t[0], text: t[1] })); });
    app.appendChild(toc);
    problems(page.problems);
    if (page.latest_run) {
      var latest = section('latest-run', 'Run ' + runName(page.latest_run.run) + ': what this machine achieved');
      app.appendChild(latest);
      runBody(page.latest_run, latest, false);
    }
    var regressions = section('regressions', 'Regressions');
    if (!page.regressions.length) regressions.appendChild(el('p', { text: 'None.' }));
    else {
      var ul = el('ul');
      page.regressions.forEach(function (r) {
        ul.appendChild(el('li', { class: 'regressed' }, link('history', r.bench_id, r.bench_id), ' on ', code(r.hardware), ': ',
          fmtNs(r.before_ns) + ' → ' + fmtNs(r.after_ns) + ' (' + fmtPercent(r.change_percent) + ') starting with ',
          link('run', r.run_id, r.run_name)));
      });
      regressions.appendChild(ul);
    }
    app.appendChild(regressions);
    var groups = section('hardware-groups', 'Latest run vs baseline');
    groups.appendChild(el('p', { text: 'Baseline: the level before the most recent step, else the median of the previous runs.' }));
    page.hardware_groups.forEach(function (g) { groupSummary(g, groups); });
    app.appendChild(groups);
    app.appendChild(histories(page.histories));
    var runs = section('runs', 'Runs');
    runs.appendChild(runsTable(page.runs.runs, true));
    app.appendChild(runs);
    var comparisons = section('comparisons', 'Comparisons');
    if (!page.comparisons.comparisons.length) comparisons.appendChild(el('p', { text: 'No comparisons stored.' }));
    else comparisons.appendChild(comparisonsTable(page.comparisons.comparisons));
    page.comparison_pages.forEach(function (c) {
      var d = el('details', { id: 'comparison-' + c.id }, el('summary', { text: 'Comparison #' + c.id + ': ' + c.baseline + ' → ' + c.candidate + ' (' + c.verdict + ')' }));
      lazyDetails(d, comparisonBody(c, d, true));
      comparisons.appendChild(d);
    });
    app.appendChild(comparisons);
    var hardware = section('hardware', 'Cross-hardware matrix');
    if (page.hardware) hardwareBody(page.hardware, hardware);
    else hardware.appendChild(el('p', { text: 'No whole runs to compare.' }));
    app.appendChild(hardware);
    if (page.sweeps) {
      var sweeps = section('sweeps', 'Model sweeps');
      sweepBody(page.sweeps, sweeps);
      app.appendChild(sweeps);
    }
  }

  function groupSummary(g, parent) {
    parent.appendChild(el('h3', null, 'Hardware ', code(g.hardware), ': ' + g.runs + ' runs, ', statusCell(g.status)));
    parent.appendChild(table(['status', 'benchmark', 'baseline', 'latest', 'change', 'steps'], g.latest.map(function (b) {
      return [statusCell(b.status), link('history', b.bench_id, b.bench_id), fmtNs(b.baseline_ns), fmtNs(b.latest_ns),
              fmtPercent(b.change_percent), String(b.steps)];
    })));
    if (g.not_measured.length) {
      parent.appendChild(el('h4', { text: 'Not measured in the latest run' }));
      parent.appendChild(table(['outcome', 'benchmark', 'reason'], g.not_measured.map(function (n) {
        return [statusCell(n.outcome), code(n.id), n.reason];
      })));
    }
    if (g.acknowledged.length) {
      parent.appendChild(el('h4', { text: 'Acknowledged steps' }));
      parent.appendChild(table(['benchmark', 'from run', 'why', 'who'], g.acknowledged.map(function (a) {
        return [code(a.bench_id), link('run', a.run_id, a.run_id), a.reason, a.who];
      })));
    }
  }

  // Every benchmark's history, one <details> per family (open when it has a regression).
  function histories(list) {
    var s = section('histories', 'History');
    s.appendChild(el('p', { text: 'By family; a family with a regression is open. Charts are drawn when their family opens.' }));
    var families = [];
    list.forEach(function (h) {
      var f = family(h.bench_id);
      var entry = families.filter(function (e) { return e.name === f; })[0];
      if (!entry) { entry = { name: f, pages: [] }; families.push(entry); }
      entry.pages.push(h);
    });
    families.forEach(function (f) {
      var regressed = f.pages.filter(function (h) {
        return h.hardware.some(function (x) { return x.status === 'regressed'; });
      }).length;
      var d = el('details', { class: 'family' });
      d.dataset.family = f.name;
      d.open = regressed > 0;
      d.appendChild(el('summary', { text: f.name + ' — ' + f.pages.length + ' benchmarks, ' + regressed + ' regressed' }));
      var figures = [];
      f.pages.forEach(function (h) {
        var card = el('div', { class: 'card', id: 'history-' + h.bench_id });
        card.appendChild(el('h4', null, code(h.bench_id)));
        card.appendChild(hardwareTable(h));
        var fig = figure(h.chart, true);
        figures.push(fig);
        card.appendChild(fig);
        d.appendChild(card);
      });
      lazyDetails(d, figures);
      s.appendChild(d);
    });
    return s;
  }

  // ---- start -------------------------------------------------------------------------

  var renderers = {
    runs: renderRuns, run: renderRun, history: renderHistory, comparisons: renderComparisons,
    comparison: renderComparison, hardware: renderHardware, sweep: renderSweep, snapshot: renderSnapshot
  };
  try {
    var render = renderers[data.page];
    if (!render) throw new Error('unknown page kind ' + data.page);
    render(data);
    pending.forEach(function (draw) { draw(); });
    pending = [];
    // Opening a history link's family draws its chart and scrolls to it.
    function openTarget() {
      var target = location.hash ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
      var d = target && target.closest ? target.closest('details') : null;
      if (d && !d.open) { d.open = true; target.scrollIntoView(); }
    }
    window.addEventListener('hashchange', openTarget);
    openTarget();
  } catch (e) {
    app.appendChild(el('p', { class: 'error', text: 'This page could not be drawn: ' + e }));
    state.error = String(e);
  }
  // When the page was built, and when its first frame with the charts was painted (ms
  // since navigation start): scripts/serve/scale.sh reads these for BENCHMARKS.md.
  state.readyMs = performance.now();
  requestAnimationFrame(function () { state.paintedMs = performance.now(); });
  state.ready = true;
})();
