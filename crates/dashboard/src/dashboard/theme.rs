//! Colours of the dashboard and the text charts, in one place so every page agrees:
//! FP32 white, FP16 cyan, BF16 yellow, TF32 magenta, warnings light yellow, failures light
//! red, before red and after green. `NO_COLOR` (any value) turns every colour off; the
//! selection then shows by reverse video and markers, never by colour alone.

use ratatui::style::{Color, Modifier, Style};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Theme {
    pub colour: bool,
}

/// Series colours for lines that are not a precision (kernels, backends), in order.
const PALETTE: [Color; 6] = [
    Color::LightBlue,
    Color::LightGreen,
    Color::LightMagenta,
    Color::LightCyan,
    Color::Yellow,
    Color::Gray,
];

impl Theme {
    /// Colour unless `NO_COLOR` is set (https://no-color.org: any non-empty value).
    pub fn from_env() -> Theme {
        let no_colour = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Theme { colour: !no_colour }
    }

    pub fn plain() -> Theme {
        Theme { colour: false }
    }

    fn fg(self, colour: Color) -> Style {
        if self.colour {
            Style::new().fg(colour)
        } else {
            Style::new()
        }
    }

    /// The colour of a precision, by its id part (`f32`, `bf16`, ...).
    pub fn dtype(self, dtype: Option<&str>) -> Style {
        let colour = match dtype {
            Some("f32") => Color::White,
            Some("f16") => Color::Cyan,
            Some("bf16") => Color::Yellow,
            Some("tf32") => Color::Magenta,
            Some("f64") => Color::LightBlue,
            Some("fp8e4m3") => Color::LightGreen,
            _ => Color::Gray,
        };
        self.fg(colour)
    }

    /// The n-th series colour for series that are not precisions.
    pub fn series(self, index: usize) -> Style {
        self.fg(PALETTE[index % PALETTE.len()])
    }

    pub fn warning(self) -> Style {
        self.fg(Color::LightYellow)
    }

    pub fn failure(self) -> Style {
        self.fg(Color::LightRed).add_modifier(Modifier::BOLD)
    }

    pub fn before(self) -> Style {
        self.fg(Color::Red)
    }

    pub fn after(self) -> Style {
        self.fg(Color::Green)
    }

    pub fn peak(self) -> Style {
        self.fg(Color::DarkGray)
    }

    /// Other series while one is selected (trippy's highlight over dimmed others).
    pub fn dimmed(self) -> Style {
        self.fg(Color::DarkGray)
    }

    pub fn selected(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)
    }

    pub fn title(self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }
}
